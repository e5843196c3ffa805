"""`deadletter dlq ...`: browse, count, export, purge and edit dead letters, each selection
made by the one set of filter options `redrive start` takes too."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from deadletter.cli.output import (
    NAMED,
    F,
    Failure,
    brief,
    counted,
    echo,
    json_option,
    oldest_expiry,
    print_json,
    print_table,
    server_options,
    short_id,
    when,
    wide_option,
)
from deadletter.cli.patterns import patterns
from deadletter.client import Client
from deadletter.client.records import export_record
from deadletter.domain import filters
from deadletter.domain.provenance import Reason

REASONS = click.Choice([r.value for r in Reason])


@click.group()
def dlq() -> None:
    """Browse, filter and export dead-letter queues."""


# The dead-letter filter language as options (its names on the API, docs/api.md "Filters"):
# (option, API name, help, click's extras). Every command that selects dead letters takes
# them all: dlq list, count, export, purge and redrive start.
FILTER_OPTIONS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("--source", "source_queue", "Only dead letters from this source queue.", {}),
    ("--source-tag", "source_tag", "Only dead letters of this consumer tag of their source.", {}),
    ("--reason", "reason", "Only dead letters that died for this reason.", {"type": REASONS}),
    ("--since", "since", "Dead-lettered at or after (ISO 8601 or epoch seconds).", {}),
    ("--until", "until", "Dead-lettered before (ISO 8601 or epoch seconds).", {}),
    ("--older-than", "older_than", "Dead for longer than this (90, 15m, 2h, 7d).", {}),
    ("--newer-than", "newer_than", "Dead for less than this (90, 15m, 2h, 7d).", {}),
    ("--pattern", "pattern_id", "Only the dead letters of this failure pattern (analyze).", {}),
    ("--error-class", "error_class", "The error's class (KeyError names builtins.KeyError).", {}),
    ("--error-contains", "error_contains", "Text found in the error, stack or description.", {}),
    ("--error-matches", "error_matches", "A regular expression found in the error's text.", {}),
    (
        "--attribute",
        "attribute",
        "NAME=VALUE, or NAME: the message attribute is there (repeatable; each must hold).",
        {"multiple": True},
    ),
    ("--body", "body", "A JMESPath expression over the body that must be true: customer.id.", {}),
    ("--min-deaths", "min_deaths", "Died at least this often.", {"type": click.IntRange(0)}),
    ("--max-deaths", "max_deaths", "Died at most this often.", {"type": click.IntRange(0)}),
    ("--redriven-by", "redriven_by", "Sent back by this redrive task, and dead again.", {}),
    ("--filter", "filter", "A filter saved on the DLQ (dlq filters save): a group by name.", {}),
]


def filter_options(command: F) -> F:
    """Add the filter options; the command receives `where`, the API's filter parameters."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        where: dict[str, Any] = {}
        for flag, key, _, _ in FILTER_OPTIONS:
            value = kwargs.pop(key)
            if value is not None and value != ():
                where[key] = list(value) if isinstance(value, tuple) else str(value)
                _refuse_blank(flag, where[key])
        return command(*args, where=where, **kwargs)

    decorated: Callable[..., Any] = wrapper
    for flag, key, words, extra in reversed(FILTER_OPTIONS):
        decorated = click.option(flag, key, help=words, **extra)(decorated)
    return decorated  # type: ignore[return-value]


def _refuse_blank(flag: str, value: str | list[str]) -> None:
    """An empty or blank filter is refused here, before the server is asked (which refuses
    it too): taken as no filter, `--error-class ""` would purge or redrive the whole DLQ."""
    for one in value if isinstance(value, list) else [value]:
        if "\x00" in one:
            raise click.BadParameter("may not contain NUL characters", param_hint=flag)
        if filters.blank(one):
            raise click.BadParameter(
                "is empty; leave the option out to select every dead letter", param_hint=flag
            )


@dlq.command(name="list")
@click.argument("name", type=NAMED)
@filter_options
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@wide_option
@server_options
def list_(
    client: Client,
    *,
    name: str,
    where: dict[str, Any],
    limit: int,
    as_json: bool,
    wide: bool,
) -> None:
    """List dead letters of DLQ NAME with where they came from and why they died."""
    found = []
    for message in client.dead_letters(name, page_size=min(limit, 100), **where):
        found.append(message)
        if len(found) >= limit:
            break
    if not any(m.get("provenance") for m in found) and not _sources(client, name):
        # The route lists any queue's messages; one no queue dead-letters to is not a DLQ.
        raise Failure(
            f"{name!r} is not a dead-letter queue: no queue names it as its DLQ and it holds"
            f" no dead letters; its messages: deadletter peek {name}; to make it one:"
            f" deadletter queue update SOURCE --dlq {name} --max-claims N"
        )
    if as_json:
        print_json(found)
        return
    rows = []
    for m in found:
        p = m.get("provenance") or {}
        description, error = p.get("description") or "", _error_line(p)
        why = [description, error] if wide else [" / ".join(t for t in (description, error) if t)]
        rows.append(
            (
                short_id(m["id"], wide),
                p.get("source_queue"),
                p.get("reason"),
                p.get("claim_count"),
                when(p.get("dead_lettered_at"), wide),
                *why,
            )
        )
    columns = ["id", "source", "reason", "claims", "dead-lettered"]
    columns += ["description", "error"] if wide else ["why"]
    if found:
        print_table(name, columns, rows, wide=wide, flexible=("why",))
    if where.get("pattern_id"):
        _say_how_sure(client, name, where["pattern_id"])
    stats = client.stats(name)
    total = stats["messages"]["total"]
    expiry = oldest_expiry(stats, "dead letter")
    if expiry:
        echo(expiry)
    filtered = bool(where)
    if filtered or len(found) < total:
        shown = f"{len(found)} shown" if found else "none matches"
        echo(f"{shown}; {counted(total, 'dead letter')} in {name} in all")
    else:
        echo(f"{counted(total, 'dead letter') if total else 'no dead letters'} in {name}")


def _say_how_sure(client: Client, name: str, pattern_id: str) -> None:
    """The pattern's purity under the dead letters listed by it (analyze stores it)."""
    from deadletter.pipeline.report import sureness

    for pattern in client.patterns(name):
        if pattern.get("id") == pattern_id:
            echo(sureness(pattern))


def _sources(client: Client, name: str) -> list[dict[str, Any]]:
    """The queues that dead-letter to NAME; QueueNotFound when there is no NAME (the routes
    of a DLQ answer a missing one as an empty one, Zaqar's way)."""
    client.get_queue(name)
    return client.dead_letter_sources(name)


def _error_line(provenance: dict[str, Any]) -> str:
    """The error in one line: the class given as a field, then the text's last line."""
    cls, last = provenance.get("error_class"), _last_line(provenance.get("error"))
    return f"{cls}: {last}" if cls and last and last != cls else cls or last


def _last_line(error: str | None) -> str:
    """A traceback's last line names the exception; the rest is for --json."""
    lines = [line for line in (error or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


@dlq.command()
@click.argument("name", type=NAMED)
@json_option
@server_options
def sources(client: Client, name: str, as_json: bool) -> None:
    """The queues whose dead-letter queue is NAME."""
    found = _sources(client, name)
    if as_json:
        print_json(found)
        return
    print_table(
        name,
        ["source queue", "details"],
        ((s.get("name"), brief(s, 200)) for s in found),
        flexible=("details",),
        empty=f"no queue names {name} as its dead-letter queue",
    )


@dlq.command()
@click.argument("name", type=NAMED)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "parquet"]),
    default="jsonl",
    show_default=True,
    help="JSON lines (one dead letter a line) or Parquet.",
)
@filter_options
@server_options
def export(client: Client, name: str, out: Path, fmt: str, where: dict[str, Any]) -> None:
    """Write the dead letters of NAME (those the filters select) to a file that
    `deadletter analyze --input` reads."""
    client.get_queue(name)  # a missing queue exports as an empty one otherwise
    pages = (
        [export_record(m) for m in page]
        for page in client.dead_letter_pages(name, EXPORT_PAGE, **where)
    )
    try:
        if fmt == "jsonl":
            count = 0
            with out.open("w", encoding="utf-8") as fh:
                for page in pages:
                    fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in page)
                    count += len(page)
        else:
            count = _write_parquet(pages, out)
    except OSError as exc:
        # A folder that does not exist, no permission, a full disk: the file's fault, in a line.
        raise Failure(f"cannot write {out}: {exc.strerror or exc}") from None
    echo(f"exported {counted(count, 'dead letter')} to {out}")


# Dead letters per request of an export: the most the API serves in one page.
EXPORT_PAGE = 1000


def _write_parquet(pages: Iterator[list[dict[str, Any]]], out: Path) -> int:
    """The analysis's columns (docs/pipeline.md), a row group written as each fills."""
    try:
        from deadletter.pipeline.exports import write_parquet
    except ImportError:
        raise click.ClickException(
            "Parquet needs pyarrow: install the spark extra (pip install 'deadletter[spark]')."
        ) from None
    return write_parquet(pages, out)


@dlq.command()
@click.argument("name", type=NAMED)
@filter_options
@json_option
@server_options
def count(client: Client, name: str, where: dict[str, Any], as_json: bool) -> None:
    """How many dead letters of NAME the filters select now: the preview of a purge or a
    redrive with the same filters."""
    found = client.count_dead_letters(name, **where)
    if as_json:
        print_json({"count": found})
    else:
        echo(f"{counted(found, 'dead letter') if found else 'no dead letters'} selected")


@dlq.command()
@click.argument("name", type=NAMED)
@filter_options
@click.option("--dry-run", is_flag=True, help="Count what would be deleted; delete nothing.")
@click.option("--yes", is_flag=True, help="Delete without asking.")
@server_options
def purge(client: Client, name: str, where: dict[str, Any], dry_run: bool, yes: bool) -> None:
    """Delete the dead letters of NAME the filters select (at least one filter: to empty the
    whole queue, `deadletter queue purge`)."""
    if not where:
        raise click.UsageError(
            "give at least one filter; to empty the whole queue: deadletter queue purge NAME"
        )
    selected = client.count_dead_letters(name, **where)
    if dry_run:
        echo(f"would delete {counted(selected, 'dead letter')} of {name}")
        return
    if not yes:
        click.confirm(f"delete {counted(selected, 'dead letter')} of {name}?", abort=True)
    purged = client.purge_dead_letters(name, **where)
    echo(f"deleted {counted(purged, 'dead letter')} of {name}")


@dlq.command()
@click.argument("name", type=NAMED)
@click.argument("message_id", type=NAMED)
@click.option(
    "--merge",
    "merge",
    metavar="JSON",
    help='A JSON Merge Patch of {"body", "attributes"}: \'{"body": {"customer": {"id": 7}}}\'.',
)
@click.option(
    "--patch",
    "json_patch",
    metavar="JSON",
    help='A JSON Patch (a list of operations) of it: \'[{"op": "remove", "path": "/body/x"}]\'.',
)
@click.option("--redrive", is_flag=True, help="Then send it back to its source queue.")
@json_option
@server_options
def edit(
    client: Client,
    name: str,
    message_id: str,
    merge: str | None,
    json_patch: str | None,
    redrive: bool,
    as_json: bool,
) -> None:
    """Edit dead letter MESSAGE_ID of NAME where it is (kept in its history with who and
    when, its original too), and with --redrive send it back."""
    if (merge is None) == (json_patch is None):
        raise click.UsageError("give --merge or --patch (one of them)")
    text = merge if merge is not None else json_patch
    assert text is not None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--merge/--patch") from None
    kind = "merge" if merge is not None else "json"
    done = client.edit_dead_letter(name, message_id, document, kind=kind, redrive=redrive)
    if as_json:
        print_json(done)
        return
    message = done["message"]
    echo(f"edited {message['id']} in {name}: {brief(message.get('body'), 200)}")
    task = done.get("redrive")
    if task is not None:
        echo(
            f"redrive {task['id']}: {task['status']}, {task['to_move']} to move;"
            f" follow it: deadletter redrive status {name} {task['id']}"
        )


# `dlq patterns list|show|split`, in a module of its own.
dlq.add_command(patterns)
