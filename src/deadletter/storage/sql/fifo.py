"""Statements of FIFO queues (migration 0007): the messages a FIFO claim may take, the
groups it locks and the deduplication ids a send remembers."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain.model import Message
from deadletter.storage.sql import fifo_queries as fq
from deadletter.storage.sql.executor import Executor


class FifoStatements(Executor):
    # FIFO queues

    def fifo_candidates(
        self, project: str, queue: str, now: float, limit: int, groups: Sequence[str] | None = None
    ) -> list[Message]:
        params = {"project": project, "queue": queue, "now": now, "limit": limit}
        if groups is None:
            return self._messages(fq.FIFO_CANDIDATES, {**params, "groups": None})
        return self._messages(fq.FIFO_CLAIMABLE_LOCKED, {**params, "groups": list(groups)})

    def add_fifo_groups(self, project: str, queue: str, groups: Sequence[str]) -> None:
        """In name order, so that two transactions never wait for each other's new rows in
        turn (a new row keeps others making it waiting until this commits)."""
        key = {"project": project, "queue": queue}
        self.run_many(fq.ENSURE_FIFO_GROUP, [{**key, "group_id": g} for g in sorted(set(groups))])

    def lock_fifo_groups(self, project: str, queue: str, groups: Sequence[str]) -> list[str]:
        self.add_fifo_groups(project, queue, groups)
        rows = self.all(fq.LOCK_FIFO_GROUPS, {"project": project, "queue": queue,
                                             "groups": list(groups)})  # fmt: skip
        return [r["group_id"] for r in rows]

    def remember_deduplication(
        self,
        project: str,
        queue: str,
        scope: str,
        dedup_id: str,
        message: Message,
        until: float,
        now: float,
    ) -> tuple[str, int] | None:
        key = {"project": project, "queue": queue, "scope": scope, "dedup_id": dedup_id}
        params = {**key, "message_id": message.id, "seq": message.seq}
        if self.one(fq.REMEMBER_DEDUP, {**params, "expires_at": until, "now": now}):
            return None
        row = self.one(fq.DEDUP_ORIGINAL, key)
        return str(row["message_id"]), int(row["seq"])

    def forget_deduplications(self, project: str, queue: str, now: float) -> None:
        self.run(fq.FORGET_EXPIRED_DEDUP, {"project": project, "queue": queue, "now": now})
