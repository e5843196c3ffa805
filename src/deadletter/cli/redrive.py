"""`deadletter redrive ...`: send dead letters back, as a task with progress."""

from __future__ import annotations

import json
import time
from typing import Any, NoReturn

import click

from deadletter.cli.auto_redrive import auto, percent
from deadletter.cli.dlq import filter_options
from deadletter.cli.output import (
    INTERRUPTED,
    NAMED,
    counted,
    echo,
    json_option,
    print_json,
    print_table,
    server_options,
    when,
    wide_option,
)
from deadletter.client import ApiError, Client, Unreachable

ACTIVE = ("RUNNING", "CANCELLING")  # a PAUSED task moves nothing more

# What a completed task's `gone` counts, in the words its line says it.
GONE = "left the DLQ or were claimed meanwhile"


@click.group()
def redrive() -> None:
    """Start, watch and cancel redrive tasks; set a DLQ's automatic redrive."""


redrive.add_command(auto)


@redrive.command()
@click.argument("dlq", type=NAMED)
@click.option("--to", "destination", help="One queue for all; by default each its own source.")
@filter_options
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="Messages per second.")
@click.option(
    "--canary",
    metavar="N|P%",
    help="Move N dead letters (or P% of those selected) first and watch them;"
    " the rest follows only if few enough die again.",
)
@click.option(
    "--watch",
    type=click.FloatRange(min=0, min_open=True, max=86_400),
    help="Seconds to watch the canary (default 60).",
)
@click.option(
    "--max-redeath",
    metavar="P%",
    help="The share of the canary that may die again, the task still going on (default 0%).",
)
@click.option(
    "--transform",
    metavar="JSON",
    help='A JSON Merge Patch of {"body", "attributes"} applied to each dead letter as it moves'
    ' (kept in its history): \'{"body": {"customer": {"id": "unknown"}}}\'.',
)
@click.option("--dry-run", is_flag=True, help="Count what the task would move; start nothing.")
@click.option(
    "--seed",
    type=click.IntRange(0, 2**32 - 1),
    help="The seed of the canary's draw, to draw the same sample again (default: from the task).",
)
@click.option(
    "--force",
    is_flag=True,
    help="A canary over a pattern flagged impure too (refused otherwise: the sample cannot"
    " vouch for a pattern that mixes failures).",
)
@click.option("--wait", is_flag=True, help="Show progress until the task ends.")
@json_option
@server_options
def start(
    client: Client,
    *,
    dlq: str,
    destination: str | None,
    where: dict[str, Any],
    rate: float | None,
    canary: str | None,
    watch: float | None,
    max_redeath: str | None,
    transform: str | None,
    dry_run: bool,
    seed: int | None,
    force: bool,
    wait: bool,
    as_json: bool,
) -> None:
    """Move dead letters of DLQ back to where they came from: those the filters select (a
    consumer tag's go back to that tag only)."""
    if (watch is not None or max_redeath is not None or seed is not None or force) and (
        canary is None
    ):
        raise click.UsageError("--watch, --max-redeath, --seed and --force go with --canary.")
    if dry_run:
        selected = client.count_dead_letters(dlq, **where)
        if as_json:
            print_json({"dry_run": True, "to_move": selected})
        else:
            echo(f"would move {counted(selected, 'dead letter')} of {dlq}")
        return
    share = percent(max_redeath)
    try:
        task = client.start_redrive(
            dlq,
            destination=destination,
            **where,
            transform=_transform(transform),
            rate=rate,
            canary=canary,
            watch=watch,
            max_redeath=share,
            seed=seed,
            force=force or None,
        )
    except KeyboardInterrupt:
        _interrupted_start(client, dlq)
    if wait:
        task = _follow(client, dlq, task, quiet=as_json, what="started")
    _report(task, as_json)


def _interrupted_start(client: Client, dlq: str) -> NoReturn:
    """Ctrl-C before the server answered the start: the request may have reached it or not.
    The DLQ's running task, if there is one, is the one this command started (one runs on a
    DLQ at a time, and a start while another runs is refused), so it is named with how to
    watch and cancel it; else the command says none runs, and where a finished one shows."""
    try:
        running = [t for t in client.redrives(dlq) if t["status"] in ACTIVE]
    except (ApiError, Unreachable, KeyboardInterrupt):
        running = None
    if running:
        task = running[0]
        said = (
            f"interrupted: redrive {task['id']} was started on {dlq} and keeps running on the"
            f" server (moved {task['moved']} of {task['to_move']}).\n"
            f"  watch it: deadletter redrive status {dlq} {task['id']}\n"
            f"  stop it:  deadletter redrive cancel {dlq} {task['id']}"
        )
    elif running is None:
        said = (
            f"interrupted before the server answered: a redrive may have started on {dlq}.\n"
            f"  see: deadletter redrive status {dlq}  (cancel one: deadletter redrive cancel"
            f" {dlq} TASK_ID)"
        )
    else:
        said = (
            f"interrupted before the server answered: no redrive task runs on {dlq} now (one"
            f" started and already done would be the first of: deadletter redrive status {dlq})."
        )
    echo(said, err=True)
    raise click.exceptions.Exit(INTERRUPTED)


def _started(dlq: str, task: dict[str, Any], what: str) -> None:
    """The task's id before any progress (on stderr: stdout keeps the result), so that a
    watch cut short still leaves the id to look the task up by. Not with --json, whose
    output is the finished task alone."""
    echo(
        f"redrive {task['id']} {what} on {dlq}: {task['to_move']} to move"
        " (Ctrl-C stops watching; the task goes on)",
        err=True,
    )


def _report(task: dict[str, Any], as_json: bool) -> None:
    """Say where a started or resumed task stands; a failed or paused one exits 1."""
    if as_json:
        print_json(task)
    else:
        echo(
            f"redrive {task['id']}: {task['status']}, moved {task['moved']} of {task['to_move']}"
            + (f", skipped {task['skipped']}" if task.get("skipped") else "")
            + (f", gone {task['gone']} ({GONE})" if task.get("gone") else "")
        )
        _echo_skipped(task)
        if task.get("canary"):
            _echo_canary(task["canary"])
    if task["status"] == "FAILED":
        echo(f"failed: {task.get('failure_reason')}", err=True)
        raise SystemExit(1)
    if task["status"] == "PAUSED":
        echo(f"paused: {task['canary']['reason']}", err=True)
        raise SystemExit(1)


def _transform(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--transform") from None


def _echo_canary(canary: dict[str, Any]) -> None:
    verdict = canary["decision"] or (
        f"watching until {canary['watch_until']}" if canary["watch_until"] else "sampling"
    )
    echo(
        f"canary: {canary['sample']} of {canary['size']} moved,"
        f" {canary['redeaths']} died again: {verdict}"
    )
    if canary.get("coverage"):
        echo(f"canary sample: {canary['coverage']} (seed {canary['seed']})")


def _echo_skipped(task: dict[str, Any]) -> None:
    """The dead letters the task left in the DLQ, with why (they are still there)."""
    for entry in task.get("skipped_messages") or []:
        echo(f"skipped {entry['id']}: {entry['reason']}")
    recorded = len(task.get("skipped_messages") or [])
    if task.get("skipped", 0) > recorded:
        echo(f"... and {task['skipped'] - recorded} more, still in the DLQ")


def _follow(
    client: Client, dlq: str, task: dict[str, Any], *, quiet: bool, what: str
) -> dict[str, Any]:
    """Progress until the task ends. Ctrl-C ends the watching only: the task runs on the
    server, so the command says so and how to watch or stop it, and exits 130 (a shell's
    code for SIGINT) rather than click's bare "Aborted!"."""
    try:
        if not quiet:
            _started(dlq, task, what)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("redrive"), BarColumn(), MofNCompleteColumn(), disable=quiet
        ) as progress:
            bar = progress.add_task("redrive", total=task["to_move"] or 1)
            while task["status"] in ACTIVE:
                progress.update(bar, completed=task["moved"])
                time.sleep(0.2)
                task = client.redrive(dlq, task["id"])
            progress.update(bar, completed=task["moved"] if task["to_move"] else 1)
    except KeyboardInterrupt:
        echo(
            f"interrupted: redrive {task['id']} keeps running on the server"
            f" (moved {task['moved']} of {task['to_move']} when last seen).\n"
            f"  watch it: deadletter redrive status {dlq} {task['id']}\n"
            f"  stop it:  deadletter redrive cancel {dlq} {task['id']}",
            err=True,
        )
        raise click.exceptions.Exit(INTERRUPTED) from None
    return task


@redrive.command()
@click.argument("dlq", type=NAMED)
@click.argument("task_id", type=NAMED, required=False)
@json_option
@wide_option
@server_options
def status(client: Client, dlq: str, task_id: str | None, as_json: bool, wide: bool) -> None:
    """Show one redrive task of DLQ, or all of them, newest first."""
    tasks = [client.redrive(dlq, task_id)] if task_id else client.redrives(dlq)
    if as_json:
        print_json(tasks)
        return
    # The task id is what `status` and `cancel` take: whole; the details give way instead.
    print_table(
        dlq,
        ["task", "status", "moved", "skipped", "to move", "destination", "rate", "started"],
        (
            (
                t["id"],
                t["status"],
                t["moved"],
                t.get("skipped", 0),
                t["to_move"],
                t.get("destination") or "(sources)",
                t.get("rate") or "unlimited",
                when(t["started_at"], wide),
            )
            for t in tasks
        ),
        wide=wide,
        optional=("destination", "rate", "started"),
        empty=f"no redrive tasks on {dlq}; start one: deadletter redrive start {dlq}",
    )
    if task_id:
        _echo_skipped(tasks[0])
        _echo_follow(dlq, tasks[0])
        if tasks[0].get("canary"):
            _echo_canary(tasks[0]["canary"])


@redrive.command()
@click.argument("dlq", type=NAMED)
@click.argument("task_id", type=NAMED)
@server_options
def cancel(client: Client, dlq: str, task_id: str) -> None:
    """Cancel a running redrive task; what it moved stays moved."""
    task = client.cancel_redrive(dlq, task_id)
    echo(f"redrive {task_id}: {task['status']}")


@redrive.command()
@click.argument("dlq", type=NAMED)
@click.argument("task_id", type=NAMED)
@click.option("--wait/--no-wait", default=False, help="Follow the task until it ends.")
@json_option
@server_options
def resume(client: Client, dlq: str, task_id: str, wait: bool, as_json: bool) -> None:
    """Resume a task its canary paused: move the rest of what it selected after all."""
    task = client.resume_redrive(dlq, task_id)
    if wait:
        task = _follow(client, dlq, task, quiet=as_json, what="resumed")
    _report(task, as_json)


def _echo_follow(dlq: str, task: dict[str, Any]) -> None:
    """How the group the task sent back fared."""
    f = task.get("follow")
    if f and f["redriven"]:
        echo(
            f"followed: {f['redriven']} redriven, {f['came_back_dead']} came back dead,"
            f" {f['still_out']} still out"
            + (f" (deadletter dlq list {dlq} --redriven-by {task['id']})"
               if f["came_back_dead"] else "")
        )  # fmt: skip
