"""The statements of failure groups: saved filters, archived dead letters, the discard log."""

from __future__ import annotations

SAVE_FILTER = (
    "INSERT INTO saved_filters (project, dlq, name, filter, created_at, updated_at)"
    " VALUES (:project, :dlq, :name, :filter, :created_at, :updated_at)"
    " ON CONFLICT (project, dlq, name) DO UPDATE SET filter = excluded.filter,"
    " updated_at = excluded.updated_at"
)
GET_FILTER = "SELECT * FROM saved_filters WHERE project = :project AND dlq = :dlq AND name = :name"
LIST_FILTERS = "SELECT * FROM saved_filters WHERE project = :project AND dlq = :dlq ORDER BY name"
DELETE_FILTER = "DELETE FROM saved_filters WHERE project = :project AND dlq = :dlq AND name = :name"

ARCHIVED_FIELDS = ("id", "project", "dlq", "seq", "body", "message", "archived_at", "keep_until")
INSERT_ARCHIVED = (
    f"INSERT INTO archived_dead_letters ({', '.join(ARCHIVED_FIELDS)})"
    f" VALUES ({', '.join(':' + f for f in ARCHIVED_FIELDS)})"
)
LIST_ARCHIVED = (
    "SELECT * FROM archived_dead_letters WHERE project = :project AND dlq = :dlq"
    " AND seq > :after_seq ORDER BY seq LIMIT :limit"
)
LIST_ARCHIVED_LOCKED = LIST_ARCHIVED + " FOR UPDATE"
DELETE_ARCHIVED = "DELETE FROM archived_dead_letters WHERE project = :project AND id = ANY(:ids)"
ARCHIVES_DUE = (
    "SELECT * FROM archived_dead_letters WHERE keep_until <= :now"
    " ORDER BY keep_until LIMIT :limit FOR UPDATE SKIP LOCKED"
)

# The history is JSON text: a task's id in it is an event of that task (its redrive, its edit).
COUNT_MENTIONING = (
    "SELECT COUNT(*) AS n FROM messages WHERE project = :project AND queue = :dlq"
    " AND seq > :after_seq AND provenance IS NOT NULL AND history LIKE :pattern"
)

DISCARD_FIELDS = (
    "id", "project", "dlq", "kind", "at", "by_whom", "reason", "selection", "count", "sample_ids",
)  # fmt: skip
INSERT_DISCARD = (
    f"INSERT INTO dead_letter_discards ({', '.join(DISCARD_FIELDS)})"
    f" VALUES ({', '.join(':' + f for f in DISCARD_FIELDS)})"
)
UPDATE_DISCARD = (
    "UPDATE dead_letter_discards SET count = :count, sample_ids = :sample_ids WHERE id = :id"
)
# Newest first; ids are time-ordered, so the id orders records of the same instant.
LIST_DISCARDS = (
    "SELECT * FROM dead_letter_discards WHERE project = :project AND dlq = :dlq"
    " AND (id < :before OR :before IS NULL) ORDER BY at DESC, id DESC LIMIT :limit"
)
