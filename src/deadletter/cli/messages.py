"""Producer and consumer commands: send, peek, claim, ack, nack and reject."""

from __future__ import annotations

from typing import TextIO

import click

from deadletter.cli.output import (
    NAMED,
    Failure,
    brief,
    echo,
    json_option,
    no_such_queue,
    print_json,
    print_table,
    server_options,
    short_id,
    wide_option,
)
from deadletter.cli.ranges import DeclaredRange
from deadletter.client import ApiError, Client, QueueNotFound
from deadletter.client.records import parse_body


@click.command()
@click.argument("queue", type=NAMED)
@click.argument("bodies", nargs=-1)
@click.option(
    "--body-file",
    "body_files",
    type=click.File("r", encoding="utf-8"),
    multiple=True,
    metavar="PATH",
    help="A message whose body is the file's content (- reads standard input); repeatable,"
    " and for bodies too large for an argument (over 128 KB).",
)
@click.option(
    "--ttl",
    # At most what any queue's maximum TTL may be; the queue's own bounds are the server's.
    type=DeclaredRange("MAX_MESSAGE_TTL"),
    help="Message TTL (s).",
)
@click.option(
    "--delay",
    type=DeclaredRange("DEFAULT_DELAY"),  # as a queue's default delay may be
    help="Delay before delivery (s).",
)
@click.option(
    "--create",
    is_flag=True,
    help="Create QUEUE if it does not exist (with its template's settings); else refused.",
)
@server_options
def send(
    client: Client,
    *,
    queue: str,
    bodies: tuple[str, ...],
    body_files: tuple[TextIO, ...],
    ttl: int | None,
    delay: int | None,
    create: bool,
) -> None:
    """Send messages to QUEUE; each BODY (and each --body-file's content) is JSON if it
    parses, else text. Prints their ids.

    A QUEUE that does not exist is refused (a typo would make a queue nobody reads) unless
    --create is given."""
    if not bodies and not body_files:
        raise click.UsageError("Give a BODY, or --body-file PATH (- for standard input).")
    # Read before anything is sent: a file that cannot be read sends nothing.
    for fh in body_files:
        try:
            bodies += (fh.read(),)
        except UnicodeDecodeError:
            raise click.BadParameter(
                f"{fh.name} is not UTF-8 text (a body is JSON or text)", param_hint="--body-file"
            ) from None
    if not create:
        try:
            client.get_queue(queue)  # the server creates a queue on a first send (Zaqar's way)
        except QueueNotFound:
            raise no_such_queue(client, queue, f"deadletter send {queue} --create ...") from None
    for message_id in client.send(queue, [parse_body(b) for b in bodies], ttl, delay):
        echo(message_id)


@click.command()
@click.argument("queue", type=NAMED)
@click.option("--limit", type=click.IntRange(1, 20), default=10, show_default=True)
@click.option("--include-claimed", is_flag=True, help="Show claimed messages too.")
@json_option
@wide_option
@server_options
def peek(
    client: Client, *, queue: str, limit: int, include_claimed: bool, as_json: bool, wide: bool
) -> None:
    """Show QUEUE's messages without consuming them."""
    messages = client.peek(queue, limit, include_claimed)
    if not messages:
        client.get_queue(queue)  # a missing queue lists as empty (Zaqar's way): say so
    if as_json:
        print_json(messages)
        return
    print_table(
        queue,
        ["id", "claims", "age (s)", "body"],
        (
            (short_id(m["id"], wide), m.get("claim_count"), m.get("age"), brief(m.get("body"), 200))
            for m in messages
        ),
        wide=wide,
        flexible=("body",),
        empty=f"no messages in {queue}"
        + ("" if include_claimed else " to show (claimed ones too: --include-claimed)"),
    )


@click.command()
@click.argument("queue", type=NAMED)
@click.option("--limit", type=click.IntRange(1, 20), default=1, show_default=True)
@click.option(
    "--ttl",
    type=DeclaredRange("CLAIM_TTL"),
    help="Claim TTL (s); the queue's default else.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print only 'CLAIM_ID MESSAGE_ID' lines, for shell scripts.",
)
@click.option(
    "--tag",
    help="For this consumer tag of the queue (deadletter tag); the untagged consumers else.",
)
@json_option
@wide_option
@server_options
def claim(
    client: Client,
    *,
    queue: str,
    limit: int,
    ttl: int | None,
    quiet: bool,
    tag: str | None,
    as_json: bool,
    wide: bool,
) -> None:
    """Claim messages from QUEUE. A message past its queue's max claims moves to the DLQ
    instead of being delivered (with --tag, for that tag only)."""
    claim_id, messages = client.claim(queue, limit, ttl, tag)
    if not messages:
        client.get_queue(queue)  # a missing queue has nothing to claim (Zaqar's way): say so
    if as_json:
        print_json({"claim_id": claim_id, "messages": messages})
    elif quiet:
        for m in messages:
            echo(f"{claim_id} {m['id']}")
    elif not messages:
        echo("nothing to claim")
    else:
        # The ids are what `ack`, `nack` and `reject` take: whole, and the claim's on a line
        # of its own so that no terminal wraps it.
        echo(f"claim {claim_id}")
        print_table(
            None,
            ["message", "claims", "body"],
            ((m["id"], m.get("claim_count"), brief(m.get("body"), 200)) for m in messages),
            wide=wide,
            flexible=("body",),
        )


claim_option = click.option("--claim", "claim_id", required=True, help="The claim holding it.")
tag_option = click.option(
    "--tag",
    help="For this consumer tag of the queue (deadletter tag); the untagged consumers else.",
)


@click.command()
@click.argument("queue", type=NAMED)
@click.argument("message_id", type=NAMED)
@claim_option
@tag_option
@server_options
def ack(client: Client, queue: str, message_id: str, claim_id: str, tag: str | None) -> None:
    """Acknowledge (delete) a claimed message: it was processed."""
    # Zaqar answers a delete of an unknown message with 204 whatever the claim, so the claim
    # is looked up first: a mistyped id is an error, not "acknowledged".
    try:
        held = client.get_claim(queue, claim_id, tag)
    except ApiError as exc:
        if exc.status != 404 or exc.title != "Claim not found":
            raise
        raise Failure(
            f"claim {claim_id!r} is not a live claim on {queue!r} (expired, released, or"
            f" mistyped); claim the message again: deadletter claim {queue}"
        ) from None
    if message_id not in {m["id"] for m in held.get("messages", [])}:
        raise Failure(
            f"message {message_id!r} is not held by claim {claim_id!r} (acknowledged already,"
            " or mistyped); `deadletter claim --quiet` prints each claim id with its message ids"
        )
    client.ack(queue, message_id, claim_id, tag)
    echo(f"acknowledged {message_id}")


@click.command()
@click.argument("queue", type=NAMED)
@click.argument("message_id", type=NAMED)
@claim_option
@click.option(
    "--delay",
    type=DeclaredRange("CLAIM_TTL"),  # as a claim's TTL: how long it stays hidden
    help="Seconds before retry (default: the queue's retry policy's backoff).",
)
@click.option(
    "--no-requeue",
    is_flag=True,
    help="Never deliver it again: dead-letter it now (reason rejected), or drop it if the"
    " queue has no dead-letter queue.",
)
@tag_option
@server_options
def nack(
    client: Client,
    *,
    queue: str,
    message_id: str,
    claim_id: str,
    delay: int | None,
    no_requeue: bool,
    tag: str | None,
) -> None:
    """Give a claimed message back for another delivery, after an optional delay; with
    --no-requeue, for none (RabbitMQ's nack with requeue=false)."""
    if no_requeue and delay:
        raise click.UsageError("--delay applies only to a requeued message.")
    client.release(queue, message_id, claim_id, delay=delay, tag=tag, requeue=not no_requeue)
    echo(f"{'not requeued' if no_requeue else 'released'} {message_id}")


@click.command()
@click.argument("queue", type=NAMED)
@click.argument("message_id", type=NAMED)
@claim_option
@click.option("--reason", required=True, help="Why it cannot be processed.")
@click.option("--error", "--error-message", "error", help="The error's message (or details).")
@click.option("--error-class", help="The exception's class, e.g. KeyError.")
@click.option("--error-stack", help="The stack trace.")
@tag_option
@server_options
def reject(
    client: Client,
    *,
    queue: str,
    message_id: str,
    claim_id: str,
    reason: str,
    error: str | None,
    error_class: str | None,
    error_stack: str | None,
    tag: str | None,
) -> None:
    """Dead-letter a claimed message now, with the reason and the error (with --tag, for
    that tag only: the queue's other consumers still receive it)."""
    fields = {"class": error_class, "message": error, "stack": error_stack}
    given = {k: v for k, v in fields.items() if v is not None}
    # The error's message alone is sent as one text, as it always was.
    details = given if error_class is not None or error_stack is not None else error
    moved = client.dead_letter(
        queue, message_id, claim_id, description=reason, error=details, tag=tag
    )
    # The dead letter is what `dlq list` and a redrive name; for a tag it is a copy with an
    # id of its own (the queue's other consumers still hold the original).
    letter = moved.get("message") or {}
    dlq = (letter.get("href") or "").split("/")[3:4]
    dead_id = letter.get("id") or message_id
    where = f" to {dlq[0]}" if dlq else ""
    also = f" (from message {message_id})" if dead_id != message_id else ""
    echo(f"dead-lettered {dead_id}{where}{also}")
