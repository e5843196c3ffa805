"""Key paths computed once per JVM body shape equal the key paths of each body."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from deadletter.pipeline.text import key_paths

pytestmark = pytest.mark.spark

LOGS = Path(__file__).parent.parent / "data" / "logs"
# Lines written to reach the corners: quotes kept and masked side by side, empty quotes, the
# separators Python's \s knows and Java's does not, non-ASCII digits and letters, placeholders
# glued to text, runs of variables, edge punctuation alone.
EDGES = [
    "",
    "   ",
    "'abc' foo 'x y' \"GET <PATH>\" 'GET /a/b' \"customer.id\" '' \"\"",
    "KeyError: 'customer' in 'ab 1' and \"c-1\"",
    "a\x1cb\x1fc\u00a0d\u3000e",
    "price ٣٤٥ in ₂ µs 12µs 5 ms 1190 bytes (1.16 KB) 3 KiB",
    '... :: ?! `x` "q" host/10.0.0.1 <IP>x x<ID>',
    "GET /v1/x HTTP/1.1 then POST /y?z=1 and /usr/lib/x.so C:\\Program Files\\x.exe",
    "fe80::1 ab:cd:ef:01:23:45 2001:db8:0:0:0:0:2:1 node-1.svc:8080 10.0.0.1:99 02:19",
    "deadbeef42 0xABCDEF 3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e 2026-11-22 15:04:05,123+0100",
    "éclair naïve Straße 42% -3.5 +7 1,000,000 v2 x_y [a] {b} (c) d;e=f|g",
]


def _lines() -> list[str]:
    out = list(EDGES)
    for path in sorted(LOGS.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            out += [r["Content"] for r in csv.DictReader(fh)]
    return out


def _corpus(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_key_paths_from_the_jvm_shape_equal_key_paths_of_the_body(
    spark: Any, corpus_path: Path
) -> None:
    from pyspark.sql import functions as F

    from deadletter.pipeline.shape import body_shape, key_paths_of_shape

    bodies = [
        r["body"] if isinstance(r["body"], str) else json.dumps(r["body"])
        for r in _corpus(corpus_path)[:500]
    ] + [
        None,
        "",
        "not json",
        '{"a": 01}',
        '{"a": 1.5e3, "b": -0, "c": [1, "x", null, true, {"d\\u00e9": "\\"q\\""}]}',
        '{"a": "tab\there"}',
        '{"a": "bad \\x escape"}',
        '{"a": NaN, "b": -Infinity}',
        '{"k": 1}{"k": 2}',
        '[{"a": 1}, {"a": "s"}, {"b": {"c": []}}]',
        '{"a": "x", "a": 2}',
        '"just a string"',
        "42",
        json.dumps({"items": [{"n": i} for i in range(30)]}),
    ]
    df = spark.createDataFrame([(i, b) for i, b in enumerate(bodies)], "i int, b string")
    shapes = {r["i"]: r["s"] for r in df.select("i", body_shape(F.col("b")).alias("s")).collect()}
    for i, body in enumerate(bodies):
        assert key_paths_of_shape(shapes[i]) == key_paths(body), body
    # Bodies that differ only in their values share a shape: key paths are computed per shape.
    assert len(set(shapes.values())) < len(bodies) / 5
