"""The statements of automatic redrive policies, one per DLQ (migration 0021; the design is in
docs/architecture.md), written as those of `queries` are."""

from __future__ import annotations

from deadletter.storage.sql.queries import _insert

AUTO_REDRIVE_FIELDS = (
    "project", "dlq", "spec", "state", "reason", "next_due", "open_task", "progress",
    "created_at", "updated_at",
)  # fmt: skip
PUT_AUTO_REDRIVE = _insert("auto_redrives", AUTO_REDRIVE_FIELDS) + (
    " ON CONFLICT (project, dlq) DO UPDATE SET "
    + ", ".join(f"{f} = excluded.{f}" for f in AUTO_REDRIVE_FIELDS[2:])
)
GET_AUTO_REDRIVE = "SELECT * FROM auto_redrives WHERE project = :project AND dlq = :dlq"
# A round is claimed under this lock: of the server processes that find it due, one starts
# it and the others, once the lock is theirs, find it no longer due.
GET_AUTO_REDRIVE_LOCKED = GET_AUTO_REDRIVE + " FOR UPDATE"
DELETE_AUTO_REDRIVE = "DELETE FROM auto_redrives WHERE project = :project AND dlq = :dlq"
# The active policies with something to do: a round due, or the task of the round in flight
# ended (or gone), whose outcome is still to be recorded.
DUE_AUTO_REDRIVES = (
    "SELECT a.project, a.dlq FROM auto_redrives a LEFT JOIN tasks t ON t.id = a.open_task"
    " WHERE a.state = 'active' AND (a.next_due <= :now OR (a.open_task IS NOT NULL"
    " AND (t.status IS NULL OR t.status NOT IN ('RUNNING', 'CANCELLING'))))"
    " ORDER BY a.next_due"
)
