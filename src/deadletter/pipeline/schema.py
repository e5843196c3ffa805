"""Spark sessions, the schema as a StructType, and reading export files into it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from deadletter.pipeline import require_pyspark

# Re-exported: docs/pipeline.md names the schema as `deadletter.pipeline.schema.SCHEMA_DDL`.
from deadletter.pipeline.columns import COLUMNS as COLUMNS
from deadletter.pipeline.columns import SCHEMA_DDL as SCHEMA_DDL


def schema() -> Any:
    """SCHEMA_DDL as a pyspark StructType."""
    require_pyspark()
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(SCHEMA_DDL)


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
SHUFFLE_PARTITIONS_PER_CORE = 4


def session(
    master: str | None = None,
    app_name: str = "deadletter-analyze",
    config: dict[str, str] | None = None,
    jvm_log: Path | None = None,
) -> Any:
    """A SparkSession with the `deadletter` data source registered (UTC, no UI by default).

    With `jvm_log`, a JVM started here writes its own output (log4j, the JVM's warnings, the
    Python workers' stderr) to that file instead of the terminal.
    """
    require_pyspark()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # Python workers must import this package: default them to this interpreter (a cluster
    # sets PYSPARK_PYTHON or spark.pyspark.python to its own environment).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Spark splits a file by its cores already (a 100 MB file is read by both of two);
        # past that, parts of 64 MB rather than 16: each task writes its own output files,
        # and at a million dead letters 46 tasks' files cost more than writing the rows.
        .config("spark.sql.files.maxPartitionBytes", str(64 * 1024 * 1024))
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    if jvm_log is not None and SparkContext._active_spark_context is None:
        spark = _with_stderr_to(jvm_log, builder.getOrCreate)
    else:
        spark = builder.getOrCreate()
    if not spark.sparkContext.getConf().contains(SHUFFLE_PARTITIONS):
        # Spark's default of 200 shuffle partitions is made for clusters; a few per core
        # keeps the dozen small aggregations of an analysis from paying for empty tasks.
        parallelism = spark.sparkContext.defaultParallelism
        spark.conf.set(SHUFFLE_PARTITIONS, str(SHUFFLE_PARTITIONS_PER_CORE * parallelism))
    register(spark)
    return spark


def _with_stderr_to(path: Path, start: Any) -> Any:
    """Run `start` with file descriptor 2 pointing at `path`: a process started meanwhile
    (the JVM) keeps writing there; this process gets its stderr back afterwards."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with path.open("ab") as log:
            os.dup2(log.fileno(), 2)
            return start()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def register(spark: Any) -> None:
    """Make `spark.read.format("deadletter")` and `df.write.format("deadletter")` available."""
    from deadletter.pipeline.datasource import DeadLetterDataSource

    # Spark refuses a Python reader with pushFilters unless pushdown is switched on.
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(DeadLetterDataSource)


def require_columns(df: Any, needed: list[str], step: str) -> None:
    """Fail early and clearly when a step gets a DataFrame without the columns it reads."""
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"{step} needs columns {missing}; the DataFrame has {df.columns}")


def read_export(spark: Any, path: str | Path, parquet: bool | None = None) -> Any:
    """Read a `deadletter dlq export` file (JSON lines, or Parquet: `parquet`, None to tell
    by the file) into SCHEMA. Parquet is read by Spark's own columnar reader; an export's
    attribute values are already the values (exports.attribute_value), kept as they are."""
    require_pyspark()
    from deadletter.pipeline.exports import is_parquet

    if parquet is None:
        parquet = is_parquet(Path(path))
    path = str(path)
    if parquet:
        raw = spark.read.parquet(path)
        return to_schema(raw, attribute_objects=False)
    else:
        # Nested JSON (body objects, attribute objects) read as strings keeps its JSON text.
        raw = spark.read.schema(
            "message_id string, source_queue string, reason string, description string, "
            "error string, dead_lettered_at string, claim_count int, body string, "
            "attributes map<string,string>, enqueued_at string, error_class string"
        ).json(path)
    return raw.transform(to_schema)


# The JSON text of a plain {"type","value"} object (as the export writes it, or spaced): its
# value needs no unescaping.
_PLAIN_ATTRIBUTE = r'^\{ *"type" *: *"[^"\\]*" *, *"value" *: *"([^"\\]*)" *\}$'


def _attribute_value(v: Any) -> Any:
    """The value of an attribute read as JSON text (itself when it is not an object). A plain
    object is read with one regular expression: a JSON parser per value cost more than the
    rest of reading the export."""
    from pyspark.sql import functions as F

    return F.when(v.rlike(_PLAIN_ATTRIBUTE), F.regexp_extract(v, _PLAIN_ATTRIBUTE, 1)).otherwise(
        F.coalesce(F.get_json_object(v, "$.value"), v)
    )


def to_schema(df: Any, *, attribute_objects: bool = True) -> Any:
    """Coerce a DataFrame of dead letters (export or foreign) into SCHEMA's columns and types.
    `attribute_objects`: a text attribute value may be a `{"type","value"}` object's JSON
    text, whose value is kept."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType, StringType, StructType

    cols: list[Any] = []
    fields = {f.name: f.dataType for f in df.schema.fields}
    target = {f.name: f.dataType for f in schema().fields}
    for name in COLUMNS:
        if name not in fields:
            cols.append(F.lit(None).cast(target[name]).alias(name))
            continue
        dtype = fields[name]
        col = F.col(name)
        if name == "attributes":
            if isinstance(dtype, MapType) and isinstance(dtype.valueType, StructType):
                col = F.transform_values(col, lambda _k, v: v["value"].cast("string"))
            elif isinstance(dtype, StringType):
                # A map as JSON text (older Parquet exports): its objects' values, as below.
                col = F.transform_values(
                    F.from_json(col, "map<string,string>"), lambda _k, v: _attribute_value(v)
                )
            elif (
                attribute_objects
                and isinstance(dtype, MapType)
                and isinstance(dtype.valueType, StringType)
            ):
                # Zaqar attribute objects {"type","value"} arrive as JSON text: keep the value.
                col = F.transform_values(col, lambda _k, v: _attribute_value(v))
        elif name in ("dead_lettered_at", "enqueued_at"):
            col = F.to_timestamp(col) if isinstance(dtype, StringType) else col.cast("timestamp")
        elif name == "body" and not isinstance(dtype, StringType):
            col = F.to_json(col)
        cols.append(col.cast(target[name]).alias(name))
    return df.select(*cols)
