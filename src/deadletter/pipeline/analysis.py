"""The analysis job: DataFrame -> DataFrame steps that turn dead letters into failure patterns.

Chain: `df.transform(with_mining_text).transform(with_body_shape).transform(with_templates)
.transform(with_pattern_ids)` (`patterns_of`), then `summarize` aggregates each pattern: the
whole chain on a DataFrame, each row with its texts.

`analyze` runs the same functions in fewer passes: `with_mask_keys`, `with_body_shape` and
`with_example` in one pass over the dead letters, cached narrow; `key_groups` and `key_texts`
aggregate it by a 64-bit key of the masked texts; the mining and each key's pattern are
worked out on the driver (`mined_keys`); attribute lift and the assignments join the few keys'
patterns back. Every step checks the columns it reads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deadletter.pipeline import require_pyspark, summary
from deadletter.pipeline.columns import COLUMNS
from deadletter.pipeline.mining import DEFAULT_THRESHOLD, explain, pattern_id, with_context
from deadletter.pipeline.outputs import members_of, read_assignments, write_jsonl
from deadletter.pipeline.schema import read_export, require_columns, session, to_schema


def _pandas_udf(func: Callable[..., Any], return_type: str) -> Any:
    """pyspark's pandas_udf behind one signature (its overloads do not type-check here)."""
    from pyspark.sql.pandas import functions as pandas_functions

    factory: Any = pandas_functions.pandas_udf
    return factory(func, return_type)


def with_mining_text(df: Any, narrow: bool = False) -> Any:
    """Add `signature` (exception type + top frames), `headline`, masked `tokens_text`
    (space-joined tokens), `group_key` and the masked description `context_text`; `narrow`:
    the three the analysis keeps (signature, tokens_text, context_text) and no others.

    One pandas UDF in Arrow batches. The masks were also written as JVM expressions
    (`regexp_replace` chains, `split`, higher-order functions per token) and gave the same
    tokens, but measured about twice as slow: per-token lambdas run interpreted, and a
    headline needs sixteen regex passes either way.
    """
    require_columns(df, ["error", "description"], "with_mining_text")
    from pyspark.sql import functions as F

    from deadletter.pipeline import batches

    if narrow:
        extract = _pandas_udf(batches.masked, batches.MASKED_TYPE)
        names = batches.MASKED_COLUMNS
    else:
        extract = _pandas_udf(batches.extract, batches.MINING_TYPE)
        names = batches.MINING_COLUMNS
    # A DataFrame from elsewhere may have no class: its dead letters are read as before.
    error_class = (
        F.col("error_class") if "error_class" in df.columns else F.lit(None).cast("string")
    )
    m = extract(F.col("error"), F.col("description"), error_class)
    parts = [F.col(f"_m.{name}").alias(name) for name in names]
    return df.withColumn("_m", m).select("*", *parts).drop("_m")


def with_templates(
    df: Any,
    threshold: float = DEFAULT_THRESHOLD,
    counts: Any = None,
    found: dict[tuple[str, str], str] | None = None,
) -> Any:
    """Add `template`: distinct (text, context) sequences are counted over the whole
    DataFrame, mined together on the driver with a deterministic algorithm (one group:
    templates of different lengths merge, mining.with_context), and joined back.

    Masking leaves few distinct sequences (tens to thousands), so they are collected rather
    than shuffled to one Python worker; `counts`, the rows of
    `groupBy("tokens_text", "context_text").count()` when the caller has them already, saves
    that job, and `found`, their templates when the caller mined them, the mining.
    """
    require_columns(df, ["tokens_text", "context_text"], "with_templates")
    from pyspark.sql import functions as F

    from deadletter.pipeline.mining import with_context

    if counts is None:
        counts = df.groupBy("tokens_text", "context_text").count().collect()
    if found is None:
        found = with_context(((r[0], r[1], r[2]) for r in counts), threshold)
    templates = df.sparkSession.createDataFrame(
        [(text, context, template) for (text, context), template in sorted(found.items())],
        TEMPLATE_TYPE,
    )
    # The table goes to every executor: the wide dead letters are never shuffled for the join.
    return df.join(F.broadcast(templates), ["tokens_text", "context_text"], "left")


TEMPLATE_TYPE = "tokens_text string, context_text string, template string"


def with_pattern_ids(df: Any) -> Any:
    """Add `pattern_id`, a hash of template and signature (see mining.pattern_id)."""
    require_columns(df, ["template", "signature"], "with_pattern_ids")
    from pyspark.sql import functions as F

    text = F.concat(
        F.coalesce(F.col("template"), F.lit("")),
        F.lit("\n"),
        F.coalesce(F.col("signature"), F.lit("")),
    )
    return df.withColumn("pattern_id", F.concat(F.lit("p-"), F.sha2(text, 256).substr(1, 12)))


def with_body_shape(df: Any) -> Any:
    """Add `body_shape`: what the key paths of `body` depend on (sqltext.body_shape); the key
    paths themselves are computed once per shape when the patterns are summarised."""
    require_columns(df, ["body"], "with_body_shape")
    from pyspark.sql import functions as F

    from deadletter.pipeline.shape import body_shape

    return df.withColumn("body_shape", body_shape(F.col("body")))


def patterns_of(df: Any, threshold: float = DEFAULT_THRESHOLD) -> Any:
    """The whole mining chain on a DataFrame in SCHEMA."""
    return (
        df.transform(with_mining_text)
        .transform(with_body_shape)
        .transform(lambda d: with_templates(d, threshold))
        .transform(with_pattern_ids)
    )


NARROW = [
    "message_id",
    "source_queue",
    "reason",
    "dead_lettered_at",
    "attributes",
    "signature",
    "body_shape",
]


def summarize(
    mined: Any,
    examples_from: Any = None,
    variables: dict[str, list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """One JSON-ready dict per pattern, largest first (ties by id), from a DataFrame mined
    row by row (`patterns_of`); `analyze` gets the same from its keys (`summarize_keys`).

    `mined` needs the narrow columns only; each pattern's example is read from
    `examples_from` (the dead letters in SCHEMA; by default `mined` itself). Counts, times,
    queues, reasons, hours and body shapes come from one aggregation, collected: a pattern
    has few queues, reasons, hours and shapes, so its rows are few. The figures are then
    put together by `summary`, as the in-process path does.
    """
    need = ["pattern_id", "template", *NARROW]
    require_columns(mined, need, "summarize")
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from deadletter.pipeline.shape import key_paths_of_shape

    groups = (
        mined.groupBy(
            "pattern_id",
            "template",
            "signature",
            "source_queue",
            "reason",
            F.date_trunc("hour", "dead_lettered_at").alias("hour"),
            "body_shape",
        )
        .agg(
            F.count("*").alias("count"),
            F.min("dead_lettered_at").alias("first_seen"),
            F.max("dead_lettered_at").alias("last_seen"),
        )
        .collect()
    )
    folded = summary.Folded(tuple(r) for r in groups)
    # The window sorts two columns only; the few first samples are then joined back whole.
    ranked = (
        mined.select("pattern_id", "message_id")
        .withColumn(
            "_rn", F.row_number().over(Window.partitionBy("pattern_id").orderBy("message_id"))
        )
        .where(F.col("_rn") <= summary.SAMPLES)
    )
    samples: dict[str, list[str]] = defaultdict(list)
    for r in ranked.orderBy("pattern_id", "_rn").collect():
        samples[r["pattern_id"]].append(r["message_id"])
    examples = _examples(mined if examples_from is None else examples_from, samples)
    shapes = summary.shape_findings(folded.shaped, folded.base, key_paths_of_shape)
    attrs = _attribute_findings(mined, folded.sizes())
    return summary.assemble(folded, samples, examples, shapes, attrs, variables)


def _examples(rows: Any, samples: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Each pattern's first sample, whole (message ids are unique in an export)."""
    from pyspark.sql import functions as F

    first = {ids[0]: pid for pid, ids in samples.items() if ids and ids[0] is not None}
    found: dict[str, dict[str, Any]] = {}
    if first:
        for r in rows.where(F.col("message_id").isin(*sorted(first))).collect():
            found.setdefault(first[r["message_id"]], summary.example_of(r))
    return found


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


def with_mask_keys(df: Any) -> Any:
    """Add `mask_key`, a 64-bit key of each dead letter's masked (signature, tokens_text,
    context_text); those three columns, set only on the first row of a key in its Arrow batch
    (null on the others: they are collected once per key, not sent back per row); and
    `sample`, true on the first SAMPLES rows of a key in its batch by message id (`key_texts`
    takes each pattern's samples and example from those). One pandas UDF (batches.keyed).
    """
    require_columns(df, ["message_id", "error", "description"], "with_mask_keys")
    from pyspark.sql import functions as F

    from deadletter.pipeline import batches

    keyed = _pandas_udf(batches.keyed, batches.KEYED_TYPE)
    error_class = (
        F.col("error_class") if "error_class" in df.columns else F.lit(None).cast("string")
    )
    m = keyed(F.col("message_id"), F.col("error"), F.col("description"), error_class)
    parts = [F.col(f"_m.{name}").alias(name) for name in batches.KEYED_COLUMNS]
    return df.withColumn("_m", m).select("*", *parts).drop("_m")


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
    """Mine the distinct masked pairs on the driver (with_context over their global counts,
    from `key_groups` and `key_texts`'s rows, as `with_templates` does) and give each key
    its pattern."""
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


def summarize_keys(
    keyed: Any,
    groups: list[Any],
    texts: list[Any],
    mined: Mined,
    variables: dict[str, list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """`summarize`'s patterns from `key_groups` and `key_texts`'s rows, with one more job
    over `keyed` for attribute lift."""
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


def with_pattern_of_key(df: Any, mined: Mined) -> Any:
    """Add `pattern_id` by `mask_key`: the small table of keys goes to every executor."""
    require_columns(df, ["mask_key"], "with_pattern_of_key")
    from pyspark.sql import functions as F

    table = df.sparkSession.createDataFrame(
        sorted((key, pid) for key, (pid, _t, _s) in mined.keys.items()),
        "mask_key long, pattern_id string",
    )
    return df.join(F.broadcast(table), "mask_key", "left")


@dataclass
class Result:
    """What one analysis produced."""

    out_dir: Path
    total: int
    patterns: list[dict[str, Any]]
    assignments: dict[str, str] = field(default_factory=dict, repr=False)


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
    parallelism = df.sparkSession.sparkContext.defaultParallelism
    if df.rdd.getNumPartitions() < parallelism:
        # A small export file is one partition: spread it so every core masks.
        df = df.repartition(parallelism)
    say("reading and masking the dead letters")
    # The one pass over the whole dead letters: what the later steps read is kept, narrow
    # (the wide columns on the few sample rows only, the masked texts once per key and batch).
    keyed = (
        df.transform(with_mask_keys)
        .transform(with_body_shape)
        .transform(with_example)
        .select(*KEYED)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
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
