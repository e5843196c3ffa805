"""The statements of FIFO queues (migration 0007): the messages a FIFO claim may take, the
groups it locks and the deduplication ids a send remembers."""

from __future__ import annotations

# Whether message `m` must wait: an earlier message of its group is hidden (in flight, or
# given back with a delay), or a later one is in flight (a group stays blocked until every
# message a receive handed out is done). Expired messages waiting for the sweep do not count.
_FIFO_BLOCKED = (
    "EXISTS (SELECT 1 FROM messages o /* indexed by messages_group */"
    " WHERE o.project = m.project AND o.queue = m.queue AND o.group_id = m.group_id"
    " AND o.expires_at > :now AND o.visible_at > :now"
    " AND (o.seq < m.seq OR o.claim_id IS NOT NULL))"
)
# The messages a FIFO claim may take, oldest first, of every group or of `:groups` only.
# The first read is not locked; the claimant then locks the groups' rows and reads again,
# locking the messages (`Transaction.fifo_candidates` with `groups`).
_FIFO_CLAIMABLE = (
    "SELECT * FROM messages m WHERE m.project = :project AND m.queue = :queue"
    " AND m.group_id IS NOT NULL AND m.visible_at <= :now AND m.expires_at > :now"
    " AND (m.group_id = ANY(:groups) OR :groups IS NULL)"
    f" AND NOT {_FIFO_BLOCKED}"
    " ORDER BY m.seq LIMIT :limit"
)
FIFO_CANDIDATES = _FIFO_CLAIMABLE
FIFO_CLAIMABLE_LOCKED = _FIFO_CLAIMABLE + " FOR UPDATE"
ENSURE_FIFO_GROUP = (
    "INSERT INTO fifo_groups (project, queue, group_id) VALUES (:project, :queue, :group_id)"
    " ON CONFLICT (project, queue, group_id) DO NOTHING"
)
# A group locked by another claimant is skipped, not waited for.
LOCK_FIFO_GROUPS = (
    "SELECT group_id FROM fifo_groups"
    " WHERE project = :project AND queue = :queue AND group_id = ANY(:groups)"
    " ORDER BY group_id FOR UPDATE SKIP LOCKED"
)
# Records a deduplication id unless a live record holds it: a row comes back only when this
# send is the first within the interval. A concurrent sender of the same id waits for this
# transaction, then finds the record live.
REMEMBER_DEDUP = (
    "INSERT INTO fifo_dedup (project, queue, scope, dedup_id, message_id, seq, expires_at)"
    " VALUES (:project, :queue, :scope, :dedup_id, :message_id, :seq, :expires_at)"
    " ON CONFLICT (project, queue, scope, dedup_id) DO UPDATE SET"
    " message_id = excluded.message_id, seq = excluded.seq, expires_at = excluded.expires_at"
    " WHERE fifo_dedup.expires_at <= :now"
    " RETURNING message_id"
)
DEDUP_ORIGINAL = (
    "SELECT message_id, seq FROM fifo_dedup"
    " WHERE project = :project AND queue = :queue AND scope = :scope AND dedup_id = :dedup_id"
)
FORGET_EXPIRED_DEDUP = (
    "DELETE FROM fifo_dedup WHERE project = :project AND queue = :queue AND expires_at <= :now"
)
