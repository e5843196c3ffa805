"""Key paths computed once per JVM body shape equal the key paths of each body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deadletter.pipeline.text import key_paths

pytestmark = pytest.mark.spark


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
