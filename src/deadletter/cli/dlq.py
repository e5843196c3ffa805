"""`deadletter dlq ...`: browse a dead-letter queue without consuming it, and export it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from deadletter.cli.output import (
    Failure,
    brief,
    counted,
    json_option,
    oldest_expiry,
    print_json,
    print_table,
    server_options,
    short_id,
    when,
    wide_option,
)
from deadletter.client import Client, export_record
from deadletter.domain.provenance import Reason

REASONS = click.Choice([r.value for r in Reason])


@click.group()
def dlq() -> None:
    """Browse, filter and export dead-letter queues."""


@dlq.command(name="list")
@click.argument("name")
@click.option("--source", help="Only dead letters from this source queue.")
@click.option("--source-tag", help="Only dead letters of this consumer tag of their source.")
@click.option("--reason", type=REASONS, help="Only dead letters that died for this reason.")
@click.option("--since", help="Dead-lettered at or after (ISO 8601 or epoch seconds).")
@click.option("--until", help="Dead-lettered before (ISO 8601 or epoch seconds).")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@wide_option
@server_options
def list_(
    client: Client,
    *,
    name: str,
    source: str | None,
    source_tag: str | None,
    reason: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    as_json: bool,
    wide: bool,
) -> None:
    """List dead letters of DLQ NAME with where they came from and why they died."""
    found = []
    for message in client.dead_letters(
        name,
        page_size=min(limit, 100),
        source_queue=source,
        source_tag=source_tag,
        reason=reason,
        since=since,
        until=until,
    ):
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
    stats = client.stats(name)
    total = stats["messages"]["total"]
    expiry = oldest_expiry(stats, "dead letter")
    if expiry:
        click.echo(expiry)
    filtered = any((source, source_tag, reason, since, until))
    if filtered or len(found) < total:
        shown = f"{len(found)} shown" if found else "none matches"
        click.echo(f"{shown}; {counted(total, 'dead letter')} in {name} in all")
    else:
        click.echo(f"{counted(total, 'dead letter') if total else 'no dead letters'} in {name}")


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
@click.argument("name")
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
@click.argument("name")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "parquet"]),
    default="jsonl",
    show_default=True,
    help="JSON lines (one dead letter a line) or Parquet.",
)
@click.option("--source", help="Only dead letters from this source queue.")
@click.option("--reason", type=REASONS, help="Only dead letters that died for this reason.")
@server_options
def export(
    client: Client, name: str, out: Path, fmt: str, source: str | None, reason: str | None
) -> None:
    """Write every dead letter of NAME to a file that `deadletter analyze --input` reads."""
    client.get_queue(name)  # a missing queue exports as an empty one otherwise
    records = (
        export_record(m) for m in client.dead_letters(name, source_queue=source, reason=reason)
    )
    try:
        if fmt == "jsonl":
            count = 0
            with out.open("w", encoding="utf-8") as fh:
                for record in records:
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                    count += 1
        else:
            count = _write_parquet(list(records), out)
    except OSError as exc:
        # A folder that does not exist, no permission, a full disk: the file's fault, in a line.
        raise Failure(f"cannot write {out}: {exc.strerror or exc}") from None
    click.echo(f"exported {counted(count, 'dead letter')} to {out}")


def _write_parquet(records: list[dict[str, object]], out: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise click.ClickException(
            "Parquet needs pyarrow: install the spark extra (pip install 'deadletter[spark]')."
        ) from None
    # Nested values (body, attributes, history) stay JSON text so every row has one schema.
    rows = [
        {
            k: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v
            for k, v in r.items()
        }
        for r in records
    ]
    pq.write_table(pa.Table.from_pylist(rows), out)
    return len(rows)
