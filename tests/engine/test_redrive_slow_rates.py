"""A redrive under one message a second moves at that rate: the fraction a step could not
move is carried to the next, so half a message a second is one every two seconds."""

from __future__ import annotations

from deadletter.clock import ManualClock
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, send, with_dlq


def test_half_a_message_a_second_moves_one_every_two_seconds(
    engine: Engine, clock: ManualClock
) -> None:
    # Given a DLQ holding five dead letters and a redrive at 0.5 messages a second
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *[f"m{i}" for i in range(5)])
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=1000)
    task = engine.start_redrive(P, "dlq", rate=0.5)
    # When it is stepped every second
    moved = []
    for _ in range(6):
        clock.advance(1)
        moved.append(engine.redrive_step(task.id, 100).moved)
    # Then one message moves every other second
    assert moved == [0, 1, 1, 2, 2, 3]
    # and idle time gives a burst of one message, not of a second's worth (zero) nor of more
    clock.advance(60)
    assert engine.redrive_step(task.id, 100).moved == 4
    assert engine.redrive_step(task.id, 100).moved == 4
    clock.advance(2)
    done = engine.redrive_step(task.id, 100)
    assert done.moved == 5
    clock.advance(2)
    assert engine.redrive_step(task.id, 100).status is TaskStatus.COMPLETED
