"""`deadletter dlq patterns ...`: the failure patterns `analyze` stored on a DLQ, how sure each
is, and a pattern split by hand at one of its variable positions."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.output import (
    NAMED,
    Failure,
    echo,
    json_option,
    print_json,
    print_table,
    server_options,
    wide_option,
)
from deadletter.client import Client

MAX_POSITION = 4096  # as the API takes it: a template is at most 4,096 characters


@click.group()
def patterns() -> None:
    """The failure patterns stored on a DLQ (`deadletter analyze`): list, show, split."""


def purity_cell(pattern: dict[str, Any]) -> str:
    """The purity as a table shows it: the score, and `impure` when the analysis flagged it."""
    purity = pattern.get("purity")
    score = f"{purity:.2f}" if isinstance(purity, int | float) else "—"
    return f"{score} impure" if pattern.get("impure") else score


@patterns.command(name="list")
@click.argument("dlq", type=NAMED)
@json_option
@wide_option
@server_options
def list_patterns(client: Client, dlq: str, as_json: bool, wide: bool) -> None:
    """The patterns stored on DLQ, the largest first: count, purity and template."""
    found = sorted(client.patterns(dlq), key=lambda p: -int(p.get("count") or 0))
    if not found:
        client.get_queue(dlq)  # a missing DLQ answers as one without patterns: say so
    if as_json:
        print_json(found)
        return
    print_table(
        dlq,
        ["pattern", "count", "purity", "template"],
        ((p.get("id"), p.get("count"), purity_cell(p), p.get("template")) for p in found),
        wide=wide,
        flexible=("template",),
        empty=f"no patterns stored for {dlq} (deadletter analyze --queue {dlq} finds them)",
    )


@patterns.command()
@click.argument("dlq", type=NAMED)
@click.argument("pattern_id", type=NAMED)
@json_option
@server_options
def show(client: Client, dlq: str, pattern_id: str, as_json: bool) -> None:
    """One pattern: its template, how sure it is, and each variable position with the values
    its members hold there (the positions `split --position` takes)."""
    pattern = _stored(client, dlq, pattern_id)
    if as_json:
        print_json(pattern)
        return
    from deadletter.pipeline.report import sureness

    echo(sureness(pattern))
    echo(f"template: {pattern.get('template') or ''}")
    if pattern.get("split"):
        was = pattern["split"]
        echo(
            f"split by hand from {was.get('from')} at position {was.get('position')}"
            f" ({was.get('template')}), {was.get('at')}"
        )
    for variable in pattern.get("variables") or []:
        echo(_variable_line(variable))


def _variable_line(v: dict[str, Any]) -> str:
    """`#2 <*>: format (3), repartition (2); 2 values` and its warning, if any."""
    values = [
        f"{x!s} ({n})" for x, n in zip(v.get("values") or [], v.get("counts") or [], strict=False)
    ]
    distinct = v.get("distinct")
    more = f"; {distinct} values" if isinstance(distinct, int) else ""
    warning = f" — {v['warning']}" if v.get("warning") else ""
    return f"  #{v.get('variable')} {v.get('token', '')}: {', '.join(values)}{more}{warning}"


@patterns.command()
@click.argument("dlq", type=NAMED)
@click.argument("pattern_id", type=NAMED)
@click.option(
    "--position",
    type=click.IntRange(1, MAX_POSITION),
    required=True,
    help="The variable position to split at, from 1, as `dlq patterns show` numbers them.",
)
@click.option(
    "--dry-run", is_flag=True, help="Only list the patterns the split would make; change nothing."
)
@json_option
@server_options
def split(
    client: Client, *, dlq: str, pattern_id: str, position: int, dry_run: bool, as_json: bool
) -> None:
    """Replace PATTERN_ID by one pattern per value its dead letters hold at a variable
    position, the value a constant of each new pattern's template.

    Each dead letter's value is read from its error against the template; those it does not
    read, and those no longer in DLQ, stay in PATTERN_ID. A later `analyze` stores its own
    patterns in place of these."""
    done = client.split_pattern(dlq, pattern_id, position=position, dry_run=dry_run)
    if as_json:
        print_json(done)
        return
    made = done.get("patterns") or []
    said = "would split" if dry_run else "split"
    print_table(
        f"{pattern_id} {said} at position {position} into {len(made)}",
        ["pattern", "count", "template"],
        ((p.get("id"), p.get("count"), p.get("template")) for p in made),
        flexible=("template",),
    )
    if done.get("unread"):
        stay = "would stay" if dry_run else "stayed"
        echo(
            f"{done['unread']} of its dead letters {stay} in {pattern_id}: no longer in {dlq},"
            " or their errors do not read against its template."
        )


def _stored(client: Client, dlq: str, pattern_id: str) -> dict[str, Any]:
    for pattern in client.patterns(dlq):
        if pattern.get("id") == pattern_id:
            return pattern
    client.get_queue(dlq)  # a missing DLQ is said as such
    raise Failure(f"no pattern {pattern_id} is stored for {dlq} (dlq patterns list {dlq})")
