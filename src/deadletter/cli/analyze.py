"""`deadletter analyze`: find failure patterns in dead letters with Spark; `analyze generate`."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click
from click.core import ParameterSource


@click.group(invoke_without_command=True)
@click.option(
    "--input",
    "input_path",
    type=click.Path(exists=True, path_type=Path),
    help="An export file (JSON lines or Parquet) from `deadletter dlq export`.",
)
@click.option(
    "--url",
    envvar="DEADLETTER_URL",
    show_envvar=True,
    help="Read the DLQ from this server instead.",
)
@click.option("--queue", help="The DLQ to analyse (with --url).")
@click.option(
    "--project",
    envvar="DEADLETTER_PROJECT",
    show_envvar=True,
    default=None,
    help="X-Project-ID (with --url).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("report"),
    show_default=True,
    help="Folder for patterns.json, assignments.jsonl, Parquet tables and report.html.",
)
@click.option(
    "--master",
    envvar="DEADLETTER_SPARK_MASTER",
    show_envvar=True,
    default=None,
    help="Spark master, e.g. local[2] or spark://host:7077 (default: Spark's own).",
)
@click.option("--partitions", default=4, show_default=True, help="Read partitions (with --url).")
@click.option(
    "--threshold",
    default=0.5,
    show_default=True,
    help="Share of equal tokens for two messages to share a template.",
)
@click.option(
    "--post/--no-post",
    default=True,
    show_default=True,
    help="With --url, store the patterns on the server for `redrive start --pattern`.",
)
@click.pass_context
def analyze(
    ctx: click.Context,
    input_path: Path | None,
    url: str | None,
    queue: str | None,
    project: str | None,
    out_dir: Path,
    master: str | None,
    partitions: int,
    threshold: float,
    post: bool,
) -> None:
    """Group dead letters into failure patterns and write a report."""
    if ctx.invoked_subcommand is not None:
        return
    if input_path is not None and ctx.get_parameter_source("url") is ParameterSource.ENVIRONMENT:
        url = None  # DEADLETTER_URL names the server for the other commands; --input wins here
    if (input_path is None) == (url is None):
        raise click.UsageError("give exactly one of --input FILE or --url URL --queue DLQ")
    if url is not None and not queue:
        raise click.UsageError("--url needs --queue")
    try:
        from deadletter.pipeline.analysis import analyze as run
        from deadletter.pipeline.remote import put_patterns
        from deadletter.pipeline.schema import session
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        spark = session(master)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    if input_path is not None:
        result = run(str(input_path), out_dir, spark=spark, threshold=threshold)
    else:
        assert url is not None and queue is not None
        reader = spark.read.format("deadletter").option("url", url).option("queue", queue)
        if project:
            reader = reader.option("project", project)
        df = reader.option("partitions", str(partitions)).load()
        poster = partial(put_patterns, url, queue, project=project) if post else None
        result = run(df, out_dir, spark=spark, threshold=threshold, post=poster)
    click.echo(f"{result.total} dead letters, {len(result.patterns)} patterns -> {out_dir}")
    for p in result.patterns[:10]:
        click.echo(f"  {p['id']}  {p['count']:>8}  {p['template'][:80]}")


@analyze.command()
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSON-lines file to write (export format plus a `label` field).",
)
@click.option("--count", default=10_000, show_default=True, help="Number of dead letters.")
@click.option("--seed", default=0, show_default=True, help="Same seed, same corpus.")
def generate(out_path: Path, count: int, seed: int) -> None:
    """Write a labelled corpus of realistic dead letters."""
    from deadletter.pipeline.corpus import write_jsonl

    n = write_jsonl(out_path, count, seed)
    click.echo(f"{n} dead letters -> {out_path}")
