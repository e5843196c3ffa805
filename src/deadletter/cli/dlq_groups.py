"""`deadletter dlq archive|restore|archived|discard|discards|filters ...`: failure groups as
units, each selected by the filter options (a saved filter by `--filter NAME`), each with a
preview (`--dry-run`). The `dlq` group of `cli/dlq.py`, with these commands added."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.dlq import dlq, filter_options
from deadletter.cli.output import (
    NAMED,
    counted,
    echo,
    json_option,
    print_json,
    print_table,
    server_options,
    short_id,
    when,
    wide_option,
)
from deadletter.client import Client

__all__ = ["dlq"]

RETENTION = click.IntRange(60, 366 * 86_400)


def _selection_required(where: dict[str, Any]) -> None:
    if not where:
        raise click.UsageError("give a selection: --filter NAME, --pattern ID or other filters")


@dlq.command()
@click.argument("name", type=NAMED)
@filter_options
@click.option("--retention", type=RETENTION, help="Seconds to keep them (default 30 days).")
@click.option("--dry-run", is_flag=True, help="Count what would be archived; archive nothing.")
@click.option("--yes", is_flag=True, help="Archive without asking.")
@server_options
def archive(
    client: Client,
    *,
    name: str,
    where: dict[str, Any],
    retention: int | None,
    dry_run: bool,
    yes: bool,
) -> None:
    """Archive the dead letters of NAME the filters select: out of the DLQ's active view
    (browse, count, redrive, purge and analysis skip them), kept for the retention even past
    the DLQ's own, then deleted with a record; `dlq restore` brings them back."""
    _selection_required(where)
    selected = client.archive(name, retention=retention, dry_run=True, **where)
    if dry_run:
        echo(f"would archive {counted(selected, 'dead letter')} of {name}")
        return
    if not yes:
        click.confirm(f"archive {counted(selected, 'dead letter')} of {name}?", abort=True)
    done = client.archive(name, retention=retention, **where)
    echo(
        f"archived {counted(done, 'dead letter')} of {name};"
        f" see them: deadletter dlq archived {name}"
    )


@dlq.command()
@click.argument("name", type=NAMED)
@filter_options
@click.option("--dry-run", is_flag=True, help="Count what would be restored.")
@server_options
def restore(client: Client, name: str, where: dict[str, Any], dry_run: bool) -> None:
    """Bring the archived dead letters of NAME the filters select (all without one) back
    into the DLQ's active view."""
    done = client.restore(name, dry_run=dry_run, **where)
    verb = "would restore" if dry_run else "restored"
    echo(f"{verb} {counted(done, 'dead letter')} of {name}")


@dlq.command()
@click.argument("name", type=NAMED)
@filter_options
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@wide_option
@server_options
def archived(
    client: Client, *, name: str, where: dict[str, Any], limit: int, as_json: bool, wide: bool
) -> None:
    """List the archived dead letters of NAME (those the filters select), with when each
    was archived and until when it is kept."""
    found = []
    for m in client.dead_letters(name, page_size=min(limit, 100), archived="true", **where):
        found.append(m)
        if len(found) >= limit:
            break
    if as_json:
        print_json(found)
        return
    rows = []
    for m in found:
        p = m.get("provenance") or {}
        kept = m.get("archived") or {}
        rows.append((short_id(m["id"], wide), p.get("source_queue"), p.get("reason"),
                     p.get("error_class") or "", when(kept.get("at"), wide),
                     when(kept.get("keep_until"), wide)))  # fmt: skip
    print_table(
        name,
        ["id", "source", "reason", "error", "archived", "kept until"],
        rows,
        wide=wide,
        flexible=("error",),
        empty=f"nothing archived in {name}",
    )


@dlq.command()
@click.argument("name", type=NAMED)
@filter_options
@click.option("--why", required=True, help="Why they go: kept in the discard log.")
@click.option("--dry-run", is_flag=True, help="Count what would be discarded; delete nothing.")
@click.option("--yes", is_flag=True, help="Discard without asking.")
@server_options
def discard(
    client: Client, *, name: str, where: dict[str, Any], why: str, dry_run: bool, yes: bool
) -> None:
    """Delete the dead letters of NAME the filters select, keeping a record of what, why,
    who and when in the DLQ's discard log (`dlq discards`)."""
    _selection_required(where)
    selected = client.discard(name, why=why, dry_run=True, **where)["to_discard"]
    if dry_run:
        echo(f"would discard {counted(selected, 'dead letter')} of {name}")
        return
    if not yes:
        click.confirm(f"discard {counted(selected, 'dead letter')} of {name}?", abort=True)
    done = client.discard(name, why=why, **where)
    echo(f"discarded {counted(done['discarded'], 'dead letter')} of {name}")


@dlq.command()
@click.argument("name", type=NAMED)
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@json_option
@wide_option
@server_options
def discards(client: Client, name: str, limit: int, as_json: bool, wide: bool) -> None:
    """The discard log of NAME, newest first: what left it for good (discarded, or at the
    end of an archive's retention), why, who and when."""
    found = client.discards(name, limit=limit)
    if as_json:
        print_json(found)
        return
    rows = [(when(r["at"], wide), r["kind"], r["count"], _who(r.get("by")), r["why"],
             _selection(r["selection"])) for r in found]  # fmt: skip
    print_table(
        name,
        ["at", "kind", "count", "by", "why", "selection"],
        rows,
        wide=wide,
        flexible=("why", "selection"),
        empty=f"nothing discarded from {name}",
    )


def _who(by: dict[str, Any] | None) -> str:
    if not by:
        return "(retention)"
    return str(by.get("credential") or by.get("project") or "")


def _selection(fields: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in fields.items()) or "(archive)"


@dlq.group()
def filters() -> None:
    """Filters saved on a DLQ by name: a failure group that `--filter NAME` selects."""


@filters.command(name="save")
@click.argument("name", type=NAMED)
@click.argument("filter_name", type=NAMED, metavar="FILTER")
@filter_options
@json_option
@server_options
def save(
    client: Client, *, name: str, filter_name: str, where: dict[str, Any], as_json: bool
) -> None:
    """Save the filters given on DLQ NAME as FILTER (replacing one of that name)."""
    if not where:
        raise click.UsageError("give the filters to save (--error-class, --pattern, ...)")
    if "filter" in where:
        raise click.UsageError("a saved filter cannot name another (--filter)")
    saved = client.save_filter(name, filter_name, **where)
    if as_json:
        print_json(saved)
        return
    echo(f"saved {filter_name} on {name}: {_selection(saved['filter'])}")


@filters.command(name="list")
@click.argument("name", type=NAMED)
@json_option
@server_options
def list_(client: Client, name: str, as_json: bool) -> None:
    """The filters saved on DLQ NAME, with how many dead letters each selects now."""
    found = client.saved_filters(name)
    if as_json:
        print_json(found)
        return
    rows = [(f["name"], client.count_dead_letters(name, filter=f["name"]),
             _selection(f["filter"])) for f in found]  # fmt: skip
    empty = f"no filters saved on {name}; save one: deadletter dlq filters save {name} NAME ..."
    print_table(name, ["filter", "selects", "fields"], rows, flexible=("fields",), empty=empty)


@filters.command(name="show")
@click.argument("name", type=NAMED)
@click.argument("filter_name", type=NAMED, metavar="FILTER")
@server_options
def show(client: Client, name: str, filter_name: str) -> None:
    """One saved filter, as JSON."""
    print_json(client.saved_filter(name, filter_name))


@filters.command(name="delete")
@click.argument("name", type=NAMED)
@click.argument("filter_name", type=NAMED, metavar="FILTER")
@server_options
def delete(client: Client, name: str, filter_name: str) -> None:
    """Delete a saved filter (what it selects stays where it is)."""
    client.delete_filter(name, filter_name)
    echo(f"deleted filter {filter_name} of {name}")
