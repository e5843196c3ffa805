"""Small builders shared by the engine's contract tests."""

from __future__ import annotations

from deadletter.domain.model import Message, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, GroupPolicy
from deadletter.engine.engine import Engine

P = "p1"


def with_dlq(
    engine: Engine,
    source: str = "orders",
    dlq: str = "orders-dlq",
    max_claims: int = 3,
    **policy: object,
) -> None:
    engine.create_queue(P, dlq)
    engine.create_queue(
        P,
        source,
        settings=QueueSettings(
            dead_letter=DeadLetterPolicy(target=dlq, max_claims=max_claims, **policy)
        ),  # type: ignore[arg-type]
    )


def send(engine: Engine, queue: str, *bodies: str, **fields: object) -> list[Message]:
    return engine.send(P, queue, messages=[NewMessage(body=b.encode(), **fields) for b in bodies])  # type: ignore[arg-type]


def fail(engine: Engine, queue: str, times: int) -> None:
    """Claim and release everything visible, `times` times."""
    for _ in range(times):
        claim = engine.claim(P, queue, limit=1000)
        engine.release_claim(P, queue, claim_id=claim.id)


def set_tag_policy(engine: Engine, queue: str, tag: str, policy: GroupPolicy) -> None:
    """Tag `tag` of `queue` takes `policy` as its own, whatever it had."""
    engine.change_tag_policy(P, queue, name=tag, change=lambda _: policy)
