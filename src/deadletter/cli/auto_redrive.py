"""`deadletter redrive auto ...`: a DLQ's automatic redrive policy, set, shown, stopped,
resumed and deleted."""

from __future__ import annotations

import re
from typing import Any

import click

from deadletter.cli.dlq import filter_options
from deadletter.cli.output import NAMED, Failure, echo, json_option, print_json, server_options
from deadletter.client import ApiError, Client

_SPAN = re.compile(r"(\d+)([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}


def _span(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """Seconds, or a number with s, m, h or d: `600`, `10m`, `1h`."""
    found = _SPAN.fullmatch(value.strip())
    if found is None:
        raise click.BadParameter(f"{value!r} is not a span: seconds, or a number with s, m, h or d")
    return int(found.group(1)) * _UNITS[found.group(2)]


@click.group()
def auto() -> None:
    """A DLQ's automatic redrive: rounds on a schedule, each dead letter at most N times."""


@auto.command(name="set")
@click.argument("dlq", type=NAMED)
@filter_options
@click.option("--all", "whole", is_flag=True, help="The whole DLQ (instead of filters).")
@click.option(
    "--every",
    metavar="SPAN",
    required=True,
    callback=_span,
    help="Time between rounds: 600, 10m, 1h.",
)
@click.option(
    "--max-rounds",
    type=click.IntRange(1),
    required=True,
    help="How many times a dead letter is sent back at most; then it stays, marked exhausted.",
)
@click.option("--canary", metavar="N|P%", help="Each round's canary: N dead letters, or P%.")
@click.option(
    "--watch",
    type=click.FloatRange(min=0, min_open=True, max=86_400),
    help="Seconds to watch each round's canary (default 60).",
)
@click.option(
    "--max-redeath", metavar="P%", help="The share of a canary that may die again (default 0%)."
)
@click.option("--force", is_flag=True, help="A canary over a pattern flagged impure too.")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="Messages per second.")
@click.option("--stopped", is_flag=True, help="Set it stopped: no round until it is resumed.")
@json_option
@server_options
def set_(
    client: Client,
    *,
    dlq: str,
    where: dict[str, Any],
    whole: bool,
    every: int,
    max_rounds: int,
    canary: str | None,
    watch: float | None,
    max_redeath: str | None,
    force: bool,
    rate: float | None,
    stopped: bool,
    as_json: bool,
) -> None:
    """Send what the filters select in DLQ back every SPAN, with a canary each round, each
    dead letter at most --max-rounds times. Replaces the DLQ's policy if it has one (keeping
    its rounds and its state, unless --stopped)."""
    if bool(where) == whole:
        raise click.UsageError(
            "say what the rounds send back: filters (--source, --error-class, ...), or"
            " --all for the whole DLQ, not both."
        )
    if (watch is not None or max_redeath is not None or force) and canary is None:
        raise click.UsageError("--watch, --max-redeath and --force go with --canary.")
    policy: dict[str, Any] = {"filter": where, "interval": every, "max_rounds": max_rounds}
    if canary is not None:
        policy |= {"canary": canary, "watch": watch, "force": force or None,
                   "max_redeath": percent(max_redeath)}  # fmt: skip
    policy |= {"rate": rate, "enabled": False if stopped else None}
    shown = client.put_auto_redrive(dlq, {k: v for k, v in policy.items() if v is not None})
    if as_json:
        print_json(shown)
    else:
        _show(shown)


def percent(value: str | None) -> float | None:
    """A share given as "5%" or "5"; the server checks its range."""
    if value is None:
        return None
    try:
        return float(value.removesuffix("%"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a percentage", param_hint="--max-redeath"
        ) from None


@auto.command()
@click.argument("dlq", type=NAMED)
@json_option
@server_options
def show(client: Client, dlq: str, as_json: bool) -> None:
    """Show DLQ's automatic redrive: its state, rounds, next round and last round."""
    try:
        policy = client.auto_redrive(dlq)
    except ApiError as exc:
        if exc.status != 404:
            raise
        raise Failure(
            f"{dlq} has no automatic redrive; set one: deadletter redrive auto set {dlq}"
            " --every 10m --max-rounds 5 --all"
        ) from None
    if as_json:
        print_json(policy)
    else:
        _show(policy)


@auto.command()
@click.argument("dlq", type=NAMED)
@server_options
def stop(client: Client, dlq: str) -> None:
    """Stop DLQ's automatic redrive: no more rounds; the round in flight is cancelled."""
    policy = client.stop_auto_redrive(dlq)
    echo(f"auto-redrive of {dlq}: {policy['state']}")


@auto.command()
@click.argument("dlq", type=NAMED)
@server_options
def resume(client: Client, dlq: str) -> None:
    """Resume DLQ's paused or stopped automatic redrive: a round starts at once."""
    policy = client.resume_auto_redrive(dlq)
    echo(f"auto-redrive of {dlq}: {policy['state']}, next round {policy['next_round_at']}")


@auto.command()
@click.argument("dlq", type=NAMED)
@server_options
def delete(client: Client, dlq: str) -> None:
    """Delete DLQ's automatic redrive; the round in flight is cancelled."""
    client.delete_auto_redrive(dlq)
    echo(f"auto-redrive of {dlq}: deleted")


def _show(p: dict[str, Any]) -> None:
    where = ", ".join(
        f"{k}={'|'.join(v) if isinstance(v, list) else v}" for k, v in p["filter"].items()
    )
    c = p.get("canary")
    canary = "none"
    if c:
        canary = f"{c['size']}, watched {c['watch']:g} s, up to {c['max_redeath']:g}% may die again"
    lines = [
        f"auto-redrive of {p['dlq']}: {p['state']}",
        f"  selects:     {where or 'the whole DLQ'}",
        f"  every:       {p['interval']} s; each dead letter at most {p['max_rounds']} rounds",
        f"  canary:      {canary}",
        f"  rate:        {p['rate'] or 'unlimited'}",
        f"  rounds:      {p['rounds']}; moved {p['moved']}; exhausted {p['exhausted']}",
        f"  next round:  {p['next_round_at'] or '(none: ' + p['state'] + ')'}",
    ]
    last = p.get("last_round")
    if last:
        lines.append(
            f"  last round:  {last['at']} {last['outcome']}"
            + (f", task {last['task_id']}" if last["task_id"] else "")
            + f": {last['eligible']} to send back, {last['kept']} kept, {last['moved']} moved"
            + (f" ({last['reason']})" if last.get("reason") else "")
        )
    if p.get("reason"):
        lines.append(f"  reason:      {p['reason']}")
    echo("\n".join(lines))
