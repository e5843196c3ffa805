"""Statements of claims: which claim holds messages of a queue, and until when."""

from __future__ import annotations

from typing import Any

from deadletter.storage.base import ClaimRecord
from deadletter.storage.rows import Row
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.executor import Executor


def claim_from(r: Row) -> ClaimRecord:
    return ClaimRecord(
        id=r["id"],
        project=r["project"],
        queue=r["queue"],
        ttl=r["ttl"],
        grace=r["grace"],
        created_at=r["created_at"],
        expires_at=r["expires_at"],
    )


def claim_params(claim: ClaimRecord) -> dict[str, Any]:
    return {
        "id": claim.id,
        "project": claim.project,
        "queue": claim.queue,
        "ttl": claim.ttl,
        "grace": claim.grace,
        "created_at": claim.created_at,
        "expires_at": claim.expires_at,
    }


class ClaimStatements(Executor):
    # Claims

    def insert_claim(self, claim: ClaimRecord) -> None:
        self.run(q.INSERT_CLAIM, claim_params(claim))

    def get_claim(
        self, project: str, queue: str, claim_id: str, lock: bool = False
    ) -> ClaimRecord | None:
        key = {"project": project, "queue": queue, "id": claim_id}
        r = self.one(q.GET_CLAIM_LOCKED if lock else q.GET_CLAIM, key)
        return claim_from(r) if r else None

    def update_claim(self, claim: ClaimRecord) -> None:
        self.run(
            q.UPDATE_CLAIM,
            {"ttl": claim.ttl, "grace": claim.grace, "expires_at": claim.expires_at,
             "id": claim.id},
        )  # fmt: skip

    def delete_claim(self, project: str, queue: str, claim_id: str) -> None:
        self.run(q.DELETE_CLAIM, {"project": project, "queue": queue, "id": claim_id})

    def delete_stale_claims(self, now: float) -> int:
        return self.run(q.DELETE_STALE_CLAIMS, {"now": now})
