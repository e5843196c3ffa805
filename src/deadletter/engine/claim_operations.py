"""The claim side of the engine's façade: claiming, renewing and giving back messages,
changing their visibility and dead-lettering them by hand. `Engine` inherits these; the
rules live in `claims`, `visibility`, `dead_letters` and `acknowledgements`."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.clock import Clock
from deadletter.domain import errors
from deadletter.domain.model import Claim, Message
from deadletter.domain.provenance import ErrorDetails
from deadletter.engine import acknowledgements, claims, dead_letters, groups, validation, visibility
from deadletter.engine.lookups import held_by, require_queue
from deadletter.engine.transactions import Pending, Runner
from deadletter.storage.base import Transaction


class ClaimOperations:
    clock: Clock
    _runner: Runner

    def claim(
        self,
        project: str,
        queue_name: str,
        *,
        limit: int,
        ttl: int | None = None,
        grace: int = 0,
        tag: str | None = None,
    ) -> Claim:
        """Claim up to `limit` messages, oldest first; with `tag`, for that consumer tag.

        A message already delivered `max_claims` times moves to the DLQ instead, in the same
        transaction; the claim then holds only what was delivered, possibly nothing.
        """
        return self.acknowledge_and_claim(
            project,
            queue_name,
            done_claim=None,
            done=(),
            limit=limit,
            ttl=ttl,
            grace=grace,
            tag=tag,
        )[1]

    def acknowledge_and_claim(
        self,
        project: str,
        queue_name: str,
        *,
        done_claim: str | None,
        done: Sequence[str],
        limit: int,
        ttl: int | None = None,
        grace: int = 0,
        tag: str | None = None,
    ) -> tuple[list[str], Claim]:
        """Acknowledge the messages `done` that claim `done_claim` still holds, then `claim`,
        in one transaction: a consumer's last batch and its next in one commit. A message the
        claim no longer holds (its claim lapsed, it was acknowledged already) stays as it is,
        as an SQS receipt handle grown stale does. Answers the ids acknowledged and the claim.
        """
        validation.check_claim(limit, grace)
        if ttl is not None:  # the queue's own was checked with its settings
            validation.check_claim_ttl("claim TTL", ttl)

        def work(tx: Transaction, pending: Pending) -> tuple[list[str], Claim]:
            queue = require_queue(tx, project, queue_name)
            claim_ttl = queue.settings.claim_ttl if ttl is None else ttl
            group = groups.of(tx, queue, tag, lock=True)
            now = self.clock.now()
            acknowledged = []
            if done:
                held = [(mid, done_claim) for mid in done]
                verdicts = acknowledgements.acknowledge(
                    tx, pending, group, held=held, now=now, strict=False
                )
                acknowledged = [mid for mid, ok in zip(done, verdicts, strict=True) if ok is True]
            return acknowledged, claims.claim(
                tx, pending, group, limit=limit, claim_ttl=claim_ttl, grace=grace, now=now
            )

        return self._runner.run(work)

    def get_claim(
        self, project: str, queue: str, *, claim_id: str, tag: str | None = None
    ) -> Claim:
        def work(tx: Transaction) -> Claim:
            group = groups.of(tx, require_queue(tx, project, queue), tag)
            return claims.get(tx, group, claim_id, self.clock.now())

        return self._runner.read(work)

    def renew_claim(
        self,
        project: str,
        queue: str,
        *,
        claim_id: str,
        ttl: int,
        grace: int | None = None,
        tag: str | None = None,
    ) -> Claim:
        validation.check_claim_ttl("claim TTL", ttl)

        def work(tx: Transaction, _: Pending) -> Claim:
            group = groups.of(tx, require_queue(tx, project, queue), tag)
            return claims.renew(
                tx, group, claim_id=claim_id, ttl=ttl, grace=grace, now=self.clock.now()
            )

        return self._runner.run(work)

    def release_claim(
        self, project: str, queue: str, *, claim_id: str, tag: str | None = None
    ) -> int:
        """Make every message still held by the claim visible again; those delivered as often
        as the queue's policy allows go to the DLQ at once instead (see `claims.given_back`)."""

        def work(tx: Transaction, pending: Pending) -> int:
            source = require_queue(tx, project, queue)
            now = self.clock.now()
            # Locked, as its messages are: a renewal of the claim waits, or is waited for.
            if tx.get_claim(project, queue, claim_id, lock=True) is None:
                raise errors.ClaimNotFound(f"claim {claim_id!r} does not exist")
            released = claims.release(tx, pending, groups.of(tx, source, tag), claim_id, now)
            tx.delete_claim(project, queue, claim_id)
            return released

        return self._runner.run(work)

    def release_message(
        self,
        project: str,
        queue: str,
        *,
        message_id: str,
        claim_id: str,
        delay: int | None = None,
        tag: str | None = None,
        requeue: bool = True,
    ) -> Message | None:
        """Give one claimed message back (a nack), visible again after `delay` seconds (the
        queue's retry backoff when None); at its delivery limit it goes to the DLQ at once, and
        is returned as moved there. Without `requeue` it is never delivered again:
        dead-lettered at once (reason `rejected`) where the queue has an active DLQ policy,
        else dropped and counted (None)."""
        if delay is not None:
            validation.check_claim_ttl("delay", delay)
        if not requeue and delay:
            raise errors.InvalidInput("a delay applies only to a message given back to its queue")

        def work(tx: Transaction, pending: Pending) -> Message | None:
            now = self.clock.now()
            group = groups.named(require_queue(tx, project, queue), tag)
            message = held_by(group.held(tx, [message_id], now), message_id, claim_id, now)
            if not requeue:
                moved = dead_letters.not_requeued(tx, pending, group, message, now)
                return moved[0] if moved else None
            (released,) = claims.given_back(
                tx, pending, group, messages=[message], now=now, delay=delay
            ) or [message]
            return released

        return self._runner.run(work)

    def change_visibility(
        self,
        project: str,
        queue: str,
        *,
        message_id: str,
        claim_id: str,
        timeout: int,
        tag: str | None = None,
    ) -> Message:
        """Extend or shorten one message's claim; 0 makes it visible now (a nack: at its
        delivery limit it goes to the DLQ at once); the timeout is checked with the change."""
        (changed,) = self.change_visibilities(
            project, queue, changes=[(message_id, claim_id, timeout, tag)]
        )
        if isinstance(changed, errors.DeadletterError):
            raise changed
        return changed

    def change_visibilities(
        self, project: str, queue: str, *, changes: Sequence[visibility.VisibilityChange]
    ) -> list[Message | errors.DeadletterError]:
        """Several `change_visibility` calls, (message id, claim id, timeout, tag) each, in
        one transaction; per change, the message as changed or why it was refused (a refused
        change writes nothing, the others are written)."""

        def work(tx: Transaction, pending: Pending) -> list[Message | errors.DeadletterError]:
            source = require_queue(tx, project, queue)
            return visibility.change(tx, pending, source, changes, self.clock.now())

        return self._runner.run(work)

    def dead_letter(
        self,
        project: str,
        queue_name: str,
        *,
        held: Sequence[tuple[str, str]],
        description: str | None = None,
        error: str | ErrorDetails | None = None,
        tag: str | None = None,
    ) -> list[Message]:
        """A consumer holding the claims moves messages straight to the DLQ (reason `rejected`).

        `held` lists (message id, claim id) pairs; all move or none does. With `tag`, they
        are dead-lettered for that consumer tag only. `error` is one text or its fields.
        """
        details = validation.check_rejection(description, error)
        if not held:
            raise errors.InvalidInput("no messages to dead-letter")

        def work(tx: Transaction, pending: Pending) -> list[Message]:
            group = groups.of(tx, require_queue(tx, project, queue_name), tag)
            now = self.clock.now()
            return dead_letters.reject(
                tx, pending, group, held=held, now=now, description=description, error=details
            )

        return self._runner.run(work)
