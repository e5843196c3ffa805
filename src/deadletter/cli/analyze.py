"""`deadletter analyze`: failure patterns of dead letters (Spark, or in this process for small
inputs); `analyze generate`."""

from __future__ import annotations

import signal
import warnings
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import click

from deadletter.cli.analyze_input import check_filter, check_input, check_queue, source_options
from deadletter.cli.config import resolve, unreachable_hint
from deadletter.cli.dlq import filter_options
from deadletter.cli.output import INTERRUPTED, UNREACHABLE, Failure, counted, echo, no_such_queue
from deadletter.cli.progress import Progress
from deadletter.client import DEFAULT_URL, ApiError, Client, QueueNotFound, Unreachable

SPARK_START = "starting Spark ({}; a first start takes 30 to 120 s)"


@click.group(invoke_without_command=True)
@click.option(
    "--input",
    "input_path",
    type=click.Path(exists=True, path_type=Path),
    help="An export file from `deadletter dlq export` (JSON lines, or Parquet: told by its"
    " first bytes).",
)
@click.option(
    "--url",
    default=None,
    help="The server (as for every client command: --url, then DEADLETTER_URL, then the "
    f"config file, then {DEFAULT_URL}).",
)
@click.option(
    "--queue",
    help="The DLQ. Without --input the analysis reads it from the server; with --input it "
    "stores the patterns found on it, for `redrive start --pattern`.",
)
@click.option("--project", default=None, help="X-Project-ID (resolved like --url).")
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
    help="With --queue, store the patterns on the server for `redrive start --pattern`.",
)
@click.option(
    "--engine",
    type=click.Choice(["auto", "spark", "local"]),
    envvar="DEADLETTER_ANALYZE_ENGINE",
    show_envvar=True,
    default="auto",
    show_default=True,
    help="local: in this process, no Spark, an --input file or a DLQ of any size; auto: local "
    "for a JSON-lines --input file of up to 1 GB, a Parquet one of up to 80,000 dead letters or "
    "a DLQ of up to 1,000,000 dead letters, when it reads every one exactly as Spark does, else "
    "Spark.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="With --queue: keep the DLQ's stored patterns current as dead letters arrive, until "
    'Ctrl-C or SIGTERM (docs/pipeline.md, "Following a DLQ").',
)
@click.option(
    "--checkpoint",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --follow: a folder for the follow's state, so that a restart goes on after "
    "the last dead letter taken (default: none, a restart reads the whole DLQ again).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="With --follow: seconds between looks at a DLQ that had nothing new.",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="Show Spark's own log and warnings on the terminal (otherwise in OUT/spark.log).",
)
@filter_options
@click.pass_context
def analyze(
    ctx: click.Context,
    *,
    input_path: Path | None,
    url: str | None,
    queue: str | None,
    project: str | None,
    out_dir: Path,
    master: str | None,
    partitions: int,
    threshold: float,
    post: bool,
    engine: str,
    follow: bool,
    checkpoint: Path | None,
    interval: float,
    verbose: bool,
    where: dict[str, Any],
) -> None:
    """Group dead letters into failure patterns and write a report.

    The DLQ's every dead letter, or those the filter options select (as for `dlq list`).

    \b
    deadletter analyze --input dead.jsonl --out report/        # an export file
    deadletter analyze --queue orders-dlq --out report/        # the DLQ on the server
    deadletter analyze --input dead.jsonl --queue orders-dlq   # a file; patterns stored on the DLQ
    deadletter analyze --queue orders-dlq --follow --checkpoint state/  # kept current
    deadletter analyze --queue orders-dlq --error-class KeyError  # a filtered selection
    """
    if ctx.invoked_subcommand is not None:
        return
    if follow and (input_path is not None or not queue):
        raise click.UsageError("--follow follows a DLQ on the server: give --queue, not --input")
    if checkpoint is not None and not follow:
        raise click.UsageError("--checkpoint is the state of --follow")
    if input_path is None and not queue:
        raise click.UsageError(
            "give exactly one of --input FILE (an export) or --queue DLQ (read from the server);"
            " --input with --queue also stores the patterns on that DLQ"
        )
    if input_path is not None and url is not None and not queue:
        raise click.UsageError("--url with --input needs --queue: the DLQ to store the patterns on")
    check_filter(where, input_path)
    root = ctx.find_root().params
    server = resolve(url, project, root.get("key_id"), root.get("secret"))
    credential = server.credential
    url = server.url.value
    # With a credential, an unstated project is the credential's own (the server knows it).
    unstated = credential is not None and server.project.origin == "the default"
    project = None if unstated else server.project.value
    if input_path is not None:
        # The in-process engine reads every line as it goes: a file it cannot read is checked
        # whole then (`_analyze`), before Spark is tried.
        check_input(input_path, whole=engine == "spark")
    if queue and (input_path is None or post):
        check_queue(url, project, credential, queue, server.url, where=where)
    import httpx

    if follow:
        assert queue is not None
        _follow(
            queue=queue,
            out_dir=out_dir,
            master=master,
            threshold=threshold,
            post=post,
            engine=engine,
            checkpoint=checkpoint,
            interval=interval,
            verbose=verbose,
            url=url,
            project=project,
            credential=credential,
            where=where,
        )
        return
    try:
        _analyze(
            input_path=input_path,
            queue=queue,
            out_dir=out_dir,
            master=master,
            partitions=partitions,
            threshold=threshold,
            post=post,
            engine=engine,
            verbose=verbose,
            url=url,
            project=project,
            credential=credential,
            where=where,
        )
    except QueueNotFound as exc:
        with Client(url, project, credential=credential) as client:
            raise no_such_queue(client, exc.queue) from None
    except ApiError as exc:
        raise Failure(f"{exc.title}: {exc.description}") from None
    except (Unreachable, httpx.TransportError) as exc:
        raise Failure(
            f"cannot reach the server at {url}: {exc}\n{unreachable_hint(server.url)}", UNREACHABLE
        ) from None
    except Exception as exc:
        # Spark's own failures (a job that died, a reader that gave up) in one line; their
        # Java side is in OUT/spark.log, and --verbose shows everything here.
        if verbose or not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise Failure(
            f"Spark failed: {type(exc).__name__}: {first} (see {out_dir / 'spark.log'},"
            " or run again with --verbose)"
        ) from None


def _analyze(
    *,
    input_path: Path | None,
    queue: str | None,
    out_dir: Path,
    master: str | None,
    partitions: int,
    threshold: float,
    post: bool,
    engine: str,
    verbose: bool,
    url: str,
    project: str | None,
    credential: tuple[str, str] | None,
    where: dict[str, Any],
) -> None:
    try:
        from deadletter.pipeline.analysis import analyze as run
        from deadletter.pipeline.local import NotLocal, suits
        from deadletter.pipeline.remote import put_patterns
        from deadletter.pipeline.schema import session
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    say = Progress()
    options = source_options(url, project, credential, queue, where)
    poster = (
        partial(put_patterns, url, queue, project=project, credential=credential)
        if post and queue
        else None
    )
    if engine == "local" and input_path is not None and not suits(input_path, any_size=True):
        raise click.UsageError("--engine local reads an export file; use --engine spark")
    stored = queue if poster is not None else None
    local = input_path is None or suits(input_path, any_size=engine == "local")
    if engine != "spark" and local:
        try:
            result = _in_process(
                input_path=input_path,
                queue=queue,
                out_dir=out_dir,
                threshold=threshold,
                poster=poster,
                say=say,
                options=options,
                any_size=engine == "local",
            )
        except KeyboardInterrupt:
            _interrupted(None, stored, out_dir, spark=False)
        except ImportError as exc:
            raise click.ClickException(
                f"the analysis needs the spark extra: pip install 'deadletter[spark]' ({exc})"
            ) from exc
        except NotLocal as exc:
            if input_path is not None:
                check_input(input_path)  # a file that is no export is refused, not handed on
            if engine == "local":
                raise click.ClickException(f"{exc}; use --engine spark") from exc
            say(f"{exc}: Spark reads it")
        else:
            _done(say, result, out_dir)
            return
    try:
        result = _on_spark(
            session,
            run,
            say,
            input_path=input_path,
            queue=queue,
            out_dir=out_dir,
            master=master,
            partitions=partitions,
            threshold=threshold,
            poster=poster,
            verbose=verbose,
            options=options,
        )
    except KeyboardInterrupt:
        _interrupted(master, stored, out_dir, spark=True)
    _done(say, result, out_dir)


def _on_spark(
    session: Any,
    run: Any,
    say: Progress,
    *,
    input_path: Path | None,
    queue: str | None,
    out_dir: Path,
    master: str | None,
    partitions: int,
    threshold: float,
    poster: Any,
    verbose: bool,
    options: dict[str, str],
) -> Any:
    with warnings.catch_warnings():
        if not verbose:
            # pyspark's own advice (pandas versions, deprecations) is not the user's business.
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", UserWarning)
        with say.ticking():
            say(SPARK_START.format(master or "its default master"))
            try:
                spark = session(master, jvm_log=None if verbose else out_dir / "spark.log")
            except RuntimeError as exc:
                raise click.ClickException(str(exc)) from exc
            if not verbose:
                spark.sparkContext.setLogLevel("ERROR")
            source: Any = str(input_path)
            if input_path is None:
                assert queue is not None
                reader = spark.read.format("deadletter").option("partitions", str(partitions))
                source = reader.options(**options).load()
            return run(source, out_dir, spark=spark, threshold=threshold, post=poster, progress=say)


def _interrupted(master: str | None, queue: str | None, out_dir: Path, *, spark: bool) -> NoReturn:
    """Ctrl-C during an analysis: what is left running (nothing of this machine's: Spark's
    JVM is this command's child and ends with it), what was not done, and the exit code a
    shell gives SIGINT."""
    if not spark:
        where = "it ran in this process: nothing keeps running"
    elif master and not master.startswith("local"):
        where = f"the application on {master} ends with its driver, this command"
    else:
        where = "Spark's JVM, started by this command, ends with it: nothing keeps running"
    stored = f"; no patterns were stored on {queue}" if queue else ""
    echo(
        f"interrupted: the analysis stopped; {where}{stored}.\n"
        f"  {out_dir} may hold part of a report; run the command again for a whole one.",
        err=True,
    )
    raise click.exceptions.Exit(INTERRUPTED)


def _follow(
    *,
    queue: str,
    out_dir: Path,
    master: str | None,
    threshold: float,
    post: bool,
    engine: str,
    checkpoint: Path | None,
    interval: float,
    verbose: bool,
    url: str,
    project: str | None,
    credential: tuple[str, str] | None,
    where: dict[str, Any],
) -> None:
    """`--follow`: batch after batch until SIGINT or SIGTERM, which end it after the batch in
    hand (its state saved), with status 0."""
    import tempfile
    import threading

    try:
        from deadletter.pipeline.follow import Follower, TooLarge, follow_local, follow_spark
        from deadletter.pipeline.remote import put_patterns
    except (ImportError, RuntimeError) as exc:
        raise click.ClickException(
            f"the analysis needs the spark extra: pip install 'deadletter[spark]' ({exc})"
        ) from exc
    import httpx

    say = Progress()
    options = source_options(url, project, credential, queue, where)
    poster = (
        partial(put_patterns, url, queue, project=project, credential=credential) if post else None
    )
    follower = Follower(out_dir, threshold=threshold, post=poster, checkpoint=checkpoint)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOPS}
    try:
        if engine == "spark":
            from deadletter.pipeline.schema import session

            with say.ticking():
                say(SPARK_START.format(master or "its default master"))
                spark = session(master, jvm_log=None if verbose else out_dir / "spark.log")
            if not verbose:
                spark.sparkContext.setLogLevel("ERROR")
            with tempfile.TemporaryDirectory() as scratch:
                state = checkpoint or Path(scratch)
                say(f"following {queue} with a Spark streaming query (Ctrl-C stops)")
                follow_spark(
                    spark,
                    options=options,
                    follower=follower,
                    stop=stop,
                    interval=interval,
                    checkpoint=state,
                    say=say,
                )
        else:
            say(f"following {queue} in this process (Ctrl-C stops)")
            follow_local(options, follower, stop, interval, say)
    except TooLarge as exc:
        raise Failure(str(exc)) from None
    except QueueNotFound as exc:
        with Client(url, project, credential=credential) as client:
            raise no_such_queue(client, exc.queue) from None
    except ApiError as exc:
        raise Failure(f"{exc.title}: {exc.description}") from None
    except (Unreachable, httpx.TransportError) as exc:
        raise Failure(f"cannot reach the server at {url}: {exc}", UNREACHABLE) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    result = follower.result
    say("stopped")
    if result is not None:
        _done(say, result, out_dir)


_STOPS = (signal.SIGINT, signal.SIGTERM)


def _in_process(
    *,
    input_path: Path | None,
    queue: str | None,
    out_dir: Path,
    threshold: float,
    poster: Any,
    say: Progress,
    options: dict[str, str],
    any_size: bool,
) -> Any:
    """The analysis without Spark: an export file, or a DLQ read page by page into one
    until it proves too large (unless `any_size`; NotLocal: Spark takes over)."""
    from deadletter.pipeline.local import QUEUE_MAX_ROWS, analyze_dlq, analyze_local

    if input_path is not None:
        say("analysing in this process (a JSON-lines export: no Spark)")
        return analyze_local(input_path, out_dir, threshold=threshold, post=poster, progress=say)
    limit = None if any_size else QUEUE_MAX_ROWS
    say(f"reading {queue} in this process" + (f", up to {limit:,} dead letters" if limit else ""))
    return analyze_dlq(
        options, out_dir, max_rows=limit, threshold=threshold, post=poster, progress=say
    )


def _done(say: Progress, result: Any, out_dir: Path) -> None:
    from deadletter.pipeline.report import label

    say("done")
    found = counted(result.total, "dead letter"), counted(len(result.patterns), "pattern")
    echo(f"{found[0]}, {found[1]} -> {out_dir}")
    for p in result.patterns[:10]:
        echo(f"  {p['id']}  {p['count']:>6}  {label(p)[:54]}")


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
    echo(f"{counted(n, 'dead letter')} -> {out_path}")
