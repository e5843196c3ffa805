"""The analysis job: DataFrame -> DataFrame steps that turn dead letters into failure patterns.

One pass over the dead letters (`one_pass`: `with_mask_keys`, `with_body_shape`,
`with_example`) keeps each one narrow, with a 64-bit key of its masked texts; `key_groups` and
`key_texts` aggregate it by that key; the mining and each key's pattern are worked out on the
driver (`mined_keys`); `summarize_keys` puts the patterns together, and `with_pattern_of_key`
joins the few keys' patterns back for attribute lift and the assignments. `analyze` runs them
over a cache of the pass. Every step checks the columns it reads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deadletter.pipeline import require_pyspark, summary
from deadletter.pipeline.columns import COLUMNS
from deadletter.pipeline.mining import DEFAULT_THRESHOLD, pattern_id, with_context
from deadletter.pipeline.outputs import members_of, read_assignments, write_jsonl
from deadletter.pipeline.purity import explain
from deadletter.pipeline.schema import read_export, require_columns, session, to_schema


def _pandas_udf(func: Callable[..., Any], return_type: str) -> Any:
    """pyspark's pandas_udf behind one signature (its overloads do not type-check here)."""
    from pyspark.sql.pandas import functions as pandas_functions

    factory: Any = pandas_functions.pandas_udf
    return factory(func, return_type)


def with_mask_keys(df: Any, keys: Callable[..., Any] | None = None) -> Any:
    """Add `mask_key`, a 64-bit key of each dead letter's masked (signature, tokens_text,
    context_text); those three columns, set only on the first row of a key in its Arrow batch
    (null on the others: they are collected once per key, not sent back per row); and
    `sample`, true on the first SAMPLES rows of a key in its batch by message id (`key_texts`
    takes each pattern's samples and example from those).

    One pandas UDF (batches.keyed) in Arrow batches. The masks were also written as JVM
    expressions (`regexp_replace` chains, `split`, higher-order functions per token) and gave
    the same tokens, but measured about twice as slow: per-token lambdas run interpreted, and
    a headline needs sixteen regex passes either way.

    `keys` stands in for batches.keyed (same arguments, same columns): `./dev bench pipeline
    --reading` times the pass with masking that does nothing.
    """
    require_columns(df, ["message_id", "error", "description"], "with_mask_keys")
    from pyspark.sql import functions as F

    from deadletter.pipeline import batches

    keyed = _pandas_udf(keys or batches.keyed, batches.KEYED_TYPE)
    # A DataFrame from elsewhere may have no class: its dead letters are read as before.
    error_class = (
        F.col("error_class") if "error_class" in df.columns else F.lit(None).cast("string")
    )
    m = keyed(F.col("message_id"), F.col("error"), F.col("description"), error_class)
    parts = [F.col(f"_m.{name}").alias(name) for name in batches.KEYED_COLUMNS]
    return df.withColumn("_m", m).select("*", *parts).drop("_m")


def with_body_shape(df: Any) -> Any:
    """Add `body_shape`: what the key paths of `body` depend on (sqltext.body_shape); the key
    paths themselves are computed once per shape when the patterns are summarised."""
    require_columns(df, ["body"], "with_body_shape")
    from pyspark.sql import functions as F

    from deadletter.pipeline.shape import body_shape

    return df.withColumn("body_shape", body_shape(F.col("body")))


def with_example(df: Any) -> Any:
    """Add `example`: the whole dead letter (SCHEMA's columns as a struct) on the rows marked
    `sample`, null on the others, so that the wide columns of the few candidates alone are
    kept once the rest is dropped."""
    require_columns(df, [*COLUMNS, "sample"], "with_example")
    from pyspark.sql import functions as F

    return df.withColumn("example", F.when(F.col("sample"), F.struct(*COLUMNS)))


# What the analysis keeps of each dead letter after its one pass over them.
KEYED = [
    "message_id",
    "mask_key",
    "signature",
    "tokens_text",
    "context_text",
    "sample",
    "example",
    "source_queue",
    "reason",
    "dead_lettered_at",
    "attributes",
    "body_shape",
]


def one_pass(df: Any, keys: Callable[..., Any] | None = None) -> Any:
    """The KEYED columns of each dead letter in SCHEMA: what every later step reads (narrow:
    the wide columns on the few sample rows only, the masked texts once per key and batch).
    `keys`: as `with_mask_keys` takes it."""
    return (
        df.transform(with_mask_keys, keys)
        .transform(with_body_shape)
        .transform(with_example)
        .select(*KEYED)
    )


def key_groups(keyed: Any) -> Any:
    """One row per (mask key, queue, reason, hour, body shape): count, first and last times.

    Counts and times only, so that Spark aggregates by hash; the texts and samples, carried
    by few rows, are aggregated apart (`key_texts`): with them in one aggregation Spark sorts
    every row (an object aggregate past its 128 groups).
    """
    require_columns(keyed, KEYED, "key_groups")
    from pyspark.sql import functions as F

    return keyed.groupBy(
        "mask_key",
        "source_queue",
        "reason",
        F.date_trunc("hour", "dead_lettered_at").alias("hour"),
        "body_shape",
    ).agg(
        F.count("*").alias("count"),
        F.min("dead_lettered_at").alias("first_seen"),
        F.max("dead_lettered_at").alias("last_seen"),
    )


def key_texts(keyed: Any) -> Any:
    """One row per mask key: its masked texts, the message ids of its sample rows and the
    first of them whole, from the few rows that carry them.

    Each text's least and greatest value are kept: they differ only if two masked triples
    shared a 64-bit key, which `mined_keys` refuses.
    """
    require_columns(keyed, KEYED, "key_texts")
    from pyspark.sql import functions as F

    texts = ["signature", "tokens_text", "context_text"]
    return (
        keyed.where(F.col("sample") | F.col("signature").isNotNull())
        .groupBy("mask_key")
        .agg(
            *(F.min(t).alias(t) for t in texts),
            *(F.max(t).alias(f"{t}_max") for t in texts),
            F.collect_list(F.when(F.col("sample"), F.struct("message_id"))).alias("samples"),
            F.min_by("example", F.when(F.col("sample"), F.col("message_id"))).alias("example"),
        )
    )


@dataclass
class Mined:
    """The templates mined from the key groups, and the pattern of each mask key."""

    found: dict[tuple[str, str], str]
    counts: list[tuple[str, str, int]]
    keys: dict[int, tuple[str, str, str]]  # key -> (pattern id, template, signature)


def mined_keys(groups: list[Any], texts: list[Any], threshold: float = DEFAULT_THRESHOLD) -> Mined:
    """Mine the distinct masked (text, context) pairs on the driver, together, with their
    global counts from `key_groups` and `key_texts`'s rows (one deterministic mining,
    mining.with_context: templates of different lengths merge), and give each key its pattern.

    Masking leaves few distinct pairs (tens to thousands), so they are collected rather than
    shuffled to one Python worker.
    """
    per_key: dict[int, int] = defaultdict(int)
    for g in groups:
        per_key[g["mask_key"]] += g["count"]
    triples: dict[int, tuple[str, str, str]] = {}
    for t in texts:
        triple = (t["signature"], t["tokens_text"], t["context_text"])
        if triple != (t["signature_max"], t["tokens_text_max"], t["context_text_max"]):
            raise RuntimeError(f"two masked texts share the key {t['mask_key']}")
        triples[t["mask_key"]] = triple
    pair_counts: dict[tuple[str, str], int] = defaultdict(int)
    for key, n in per_key.items():
        _signature, text, context = triples[key]
        pair_counts[(text, context)] += n
    counts = [(t, c, n) for (t, c), n in pair_counts.items()]
    found = with_context(counts, threshold)
    keys = {}
    for key, (signature, text, context) in triples.items():
        template = found[(text, context)]
        keys[key] = (pattern_id(template, signature), template, signature)
    return Mined(found, counts, keys)


def with_pattern_of_key(df: Any, mined: Mined) -> Any:
    """Add `pattern_id` by `mask_key`: the small table of keys goes to every executor, so
    the dead letters are never shuffled for the join."""
    require_columns(df, ["mask_key"], "with_pattern_of_key")
    from pyspark.sql import functions as F

    table = df.sparkSession.createDataFrame(
        sorted((key, pid) for key, (pid, _t, _s) in mined.keys.items()),
        "mask_key long, pattern_id string",
    )
    return df.join(F.broadcast(table), "mask_key", "left")


def summarize_keys(
    keyed: Any,
    groups: list[Any],
    texts: list[Any],
    mined: Mined,
    variables: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """One JSON-ready dict per pattern, largest first (ties by id), from `key_groups` and
    `key_texts`'s rows, with one more job over `keyed` (`one_pass`'s rows) for attribute
    lift. The figures are put together by `summary`, as the in-process path does."""
    from deadletter.pipeline.shape import key_paths_of_shape

    folded = summary.Folded(
        (
            *mined.keys[g["mask_key"]],
            g["source_queue"],
            g["reason"],
            g["hour"],
            g["body_shape"],
            g["count"],
            g["first_seen"],
            g["last_seen"],
        )
        for g in groups
    )
    candidates: dict[str, list[str]] = defaultdict(list)
    firsts: dict[str, list[Any]] = defaultdict(list)
    for t in texts:
        pid = mined.keys[t["mask_key"]][0]
        candidates[pid] += [s["message_id"] for s in t["samples"]]
        if t["example"] is not None:
            firsts[pid].append(t["example"])
    samples = {
        pid: sorted(ids, key=lambda m: (m is not None, m or ""))[: summary.SAMPLES]
        for pid, ids in candidates.items()
    }
    examples = {}
    for pid, ids in samples.items():
        # The pattern's first dead letter by id, whole (none when its first id is missing).
        first = [r for r in firsts[pid] if ids and ids[0] is not None and r["message_id"] == ids[0]]
        if first:
            examples[pid] = summary.example_of(first[0])
    shapes = summary.shape_findings(folded.shaped, folded.base, key_paths_of_shape)
    patterns_of_keys = keyed.transform(lambda d: with_pattern_of_key(d, mined))
    attrs = _attribute_findings(patterns_of_keys, folded.sizes())
    return summary.assemble(folded, samples, examples, shapes, attrs, variables)


def _attribute_findings(mined: Any, sizes: dict[str, int]) -> dict[str, list[dict[str, Any]]]:
    """Attribute values carried by most of a pattern and over-represented against the corpus.

    One job: (pattern, name, value) counts, each value's corpus count as their sum over the
    patterns (every dead letter is in one pattern), then only the counts that reach
    LIFT_MIN_SHARE of their pattern are collected.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not sizes:
        return {}
    size_df = mined.sparkSession.createDataFrame(
        sorted(sizes.items()), "pattern_id string, size long"
    )
    candidates = (
        mined.select("pattern_id", F.explode("attributes").alias("key", "value"))
        .where(F.col("value").isNotNull())
        .groupBy("pattern_id", "key", "value")
        .agg(F.count("*").alias("n"))
        .withColumn("corpus_count", F.sum("n").over(Window.partitionBy("key", "value")))
        .join(F.broadcast(size_df), "pattern_id")
        .where(F.col("n") >= F.col("size") * summary.LIFT_MIN_SHARE)
        .select("pattern_id", "key", "value", "n", "corpus_count")
        .collect()
    )
    return summary.attribute_findings((tuple(r) for r in candidates), sizes)


@dataclass
class Result:
    """What one analysis produced."""

    out_dir: Path
    total: int
    patterns: list[dict[str, Any]]
    assignments: dict[str, str] = field(default_factory=dict, repr=False)


def spread(df: Any) -> Any:
    """`df` in at least as many partitions as the session has cores: a small export file is
    one partition, and every core should mask."""
    parallelism = df.sparkSession.sparkContext.defaultParallelism
    if df.rdd.getNumPartitions() < parallelism:
        return df.repartition(parallelism)
    return df


def analyze(
    source: Any,
    out_dir: str | Path,
    *,
    spark: Any = None,
    master: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    keep_assignments: bool = False,
    post: Callable[[list[dict[str, Any]]], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Result:
    """Find failure patterns in `source` (a DataFrame in SCHEMA or an export file's path) and
    write patterns.json, assignments.jsonl, Parquet tables and report.html into `out_dir`.

    `post`, when given, receives the patterns with their message ids (to store them on the
    server). `keep_assignments` returns the message -> pattern map in the result. `progress`
    hears the name of each stage as it starts.
    """
    require_pyspark()
    from pyspark import StorageLevel

    say = progress or (lambda _stage: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(source, str | Path):
        spark = spark or session(master)
        df = read_export(spark, source)
    else:
        df = source.transform(to_schema)
    df = spread(df)
    say("reading and masking the dead letters")
    # The one pass over the whole dead letters: what the later steps read is kept, narrow.
    keyed = df.transform(one_pass).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # The job that fills the cache also counts what the summary and the mining need.
        groups = keyed.transform(key_groups).collect()
        texts = keyed.transform(key_texts).collect()
        rows = sum(g["count"] for g in groups)
        say(f"{rows:,} dead letters masked; mining templates")
        mined = mined_keys(groups, texts, threshold)
        say("summarising the patterns")
        variables = explain(mined.found, mined.counts)
        patterns = summarize_keys(keyed, groups, texts, mined, variables)
        say(f"{len(patterns):,} patterns; writing the assignments")
        assigned = keyed.transform(lambda d: with_pattern_of_key(d, mined)).select(
            "message_id", "pattern_id"
        )
        assigned.write.mode("overwrite").parquet(str(out / "assignments.parquet"))
        write_jsonl(assigned, out / "assignments.jsonl")
        members = members_of(assigned) if post is not None else {}
    finally:
        keyed.unpersist()
    total = summary.write_summary(patterns, out)
    if post is not None:
        say("storing the patterns on the server")
        post([{**p, "message_ids": members.get(p["id"], [])} for p in patterns])
    assignments = read_assignments(out / "assignments.jsonl") if keep_assignments else {}
    return Result(out, total, patterns, assignments)
