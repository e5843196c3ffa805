"""The files an analysis writes besides the report: assignments and patterns as JSON lines
and Parquet."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_jsonl(df: Any, path: Path) -> None:
    """`df` as one JSON-lines file: Spark writes the parts in parallel, they are then joined."""
    parts = path.with_name(path.name + ".parts")
    df.write.mode("overwrite").option("ignoreNullFields", "false").json(str(parts))
    with path.open("wb") as fh:
        for part in sorted(parts.glob("part-*")):
            with part.open("rb") as src:
                shutil.copyfileobj(src, fh)
    shutil.rmtree(parts)


def members_of(mined: Any) -> dict[str, list[str]]:
    from pyspark.sql import functions as F

    rows = mined.groupBy("pattern_id").agg(F.sort_array(F.collect_list("message_id")).alias("ids"))
    return {r["pattern_id"]: list(r["ids"]) for r in rows.collect()}


def read_assignments(path: Path) -> dict[str, str]:
    with path.open() as fh:
        return {r["message_id"]: r["pattern_id"] for r in map(json.loads, fh)}


def write_patterns(patterns: Iterable[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "id": p["id"],
            "template": p["template"],
            "signature": p["signature"],
            "count": p["count"],
            "source_queues": p["source_queues"],
            "reasons": p["reasons"],
            "first_seen": p["first_seen"],
            "last_seen": p["last_seen"],
            "sample_message_ids": p["sample_message_ids"],
            "key_paths_missing": p["key_paths_missing"],
            "details": json.dumps(p),
        }
        for p in patterns
    ]
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("template", pa.string()),
            ("signature", pa.string()),
            ("count", pa.int64()),
            ("source_queues", pa.list_(pa.string())),
            ("reasons", pa.list_(pa.string())),
            ("first_seen", pa.string()),
            ("last_seen", pa.string()),
            ("sample_message_ids", pa.list_(pa.string())),
            ("key_paths_missing", pa.list_(pa.string())),
            ("details", pa.string()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
