"""The statements of consumer tags (migration 0011; the design is in docs/architecture.md),
written as those of `queries` are."""

from __future__ import annotations

from deadletter.storage.sql.queries import _BY_ID, HIDDEN, _insert

TAG_FIELDS = (
    "project", "queue", "name", "created_at", "start_seq", "start_at", "filter_attribute",
    "filter_value", "cursor_seq",
)  # fmt: skip
INSERT_TAG = _insert("tags", TAG_FIELDS) + " ON CONFLICT (project, queue, name) DO NOTHING"
GET_TAG = "SELECT * FROM tags WHERE project = :project AND queue = :queue AND name = :name"
# A tag's claimants take turns: each reads on from the cursor and writes the states it hands
# out before the next one reads.
GET_TAG_LOCKED = GET_TAG + " FOR UPDATE"
LIST_TAGS = "SELECT * FROM tags WHERE project = :project AND queue = :queue ORDER BY name"
DELETE_TAG = (
    "DELETE FROM tag_states WHERE project = :project AND queue = :queue AND tag = :name",
    "DELETE FROM tags WHERE project = :project AND queue = :queue AND name = :name",
)
SET_TAG_CURSOR = (
    "UPDATE tags SET cursor_seq = :cursor_seq"
    " WHERE project = :project AND queue = :queue AND name = :name AND cursor_seq < :cursor_seq"
)
# A message the tag has not touched, above its start, that it may see (its filter aside).
_UNSEEN = (
    " m.project = :project AND m.queue = :queue AND m.seq > :after"
    " AND m.enqueued_at >= :start_at AND (m.only_tag = :tag OR m.only_tag IS NULL)"
    " AND NOT EXISTS (SELECT 1 FROM tag_states s WHERE s.message_id = m.id AND s.tag = :tag)"
)
# The tag's state beside the message's columns, under names of its own.
_STATE_COLUMNS = (
    "s.state AS t_state, s.claim_id AS t_claim_id, s.claim_expires_at AS t_claim_expires_at,"
    " s.visible_at AS t_visible_at, s.claim_count AS t_claim_count,"
    " s.first_claimed_at AS t_first_claimed_at, s.dl_due_at AS t_dl_due_at"
)
TAG_CLAIMABLE_NEW = (
    "SELECT m.* FROM messages m /* indexed by messages_queue_seq */ WHERE" + _UNSEEN
    + " AND m.expires_at > :now AND COALESCE(m.ready_at, m.enqueued_at) <= :now"
    " ORDER BY m.seq LIMIT :limit"
)  # fmt: skip
# The states a claim decides on are locked, as the sweep's (`DUE_TAG_DEAD_LETTERS`) are, and
# those the sweep holds are skipped: a message whose last allowed claim lapsed is moved to the
# DLQ by the claim or by the sweep, never by both. The tag's claimants take turns already (its
# row, `GET_TAG_LOCKED`), so only the sweep and the tag's other writers are skipped.
TAG_CLAIMABLE_AGAIN = (
    f"SELECT m.*, {_STATE_COLUMNS} FROM tag_states s /* indexed by tag_states_live */"
    " JOIN messages m ON m.id = s.message_id"
    " WHERE s.project = :project AND s.queue = :queue AND s.tag = :tag AND s.state = 'live'"
    " AND s.visible_at <= :now AND m.expires_at > :now ORDER BY s.seq LIMIT :limit"
    " FOR UPDATE OF s SKIP LOCKED"
)
# Where the cursor may go: just before the first message the tag has not touched.
TAG_FIRST_UNSEEN = (
    "SELECT m.seq FROM messages m /* indexed by messages_queue_seq */ WHERE" + _UNSEEN
    + " ORDER BY m.seq LIMIT 1"
)  # fmt: skip
TAG_VIEWS = (
    f"SELECT m.*, {_STATE_COLUMNS} FROM messages m /* indexed by sqlite_autoindex_messages_1 */"
    " LEFT JOIN tag_states s ON s.message_id = m.id AND s.tag = :tag"
    " WHERE m.id = ANY(:ids) AND m.project = :project AND m.queue = :queue ORDER BY m.seq"
)
TAG_CLAIMED_BY = (
    f"SELECT m.*, {_STATE_COLUMNS} FROM tag_states s /* indexed by tag_states_claim */"
    " JOIN messages m ON m.id = s.message_id WHERE s.project = :project"
    " AND s.queue = :queue AND s.tag = :tag AND s.claim_id = :claim_id ORDER BY s.seq"
)
# Reads a write of the tag's states starts from lock the states they return (a message's own
# row is the untagged consumers' and other tags' too, and stays free).
TAG_CLAIMED_BY_LOCKED = TAG_CLAIMED_BY + " FOR UPDATE OF s"
TAG_VIEWS_LOCKED = (
    TAG_VIEWS.replace("LEFT JOIN tag_states s", "JOIN tag_states s") + " FOR UPDATE OF s"
)
SAVE_TAG_STATE = (
    "INSERT INTO tag_states (message_id, tag, project, queue, seq, state, claim_id,"
    " claim_expires_at, visible_at, claim_count, first_claimed_at, dl_due_at) VALUES"
    " (:message_id, :tag, :project, :queue, :seq, :state, :claim_id, :claim_expires_at,"
    " :visible_at, :claim_count, :first_claimed_at, :dl_due_at) ON CONFLICT (message_id, tag)"
    " DO UPDATE SET state = excluded.state, claim_id = excluded.claim_id,"
    " claim_expires_at = excluded.claim_expires_at, visible_at = excluded.visible_at,"
    " claim_count = excluded.claim_count, first_claimed_at = excluded.first_claimed_at,"
    " dl_due_at = excluded.dl_due_at"
)
# Tags' last allowed claims that lapsed, for the sweep (`DUE_DEAD_LETTERS` of tags).
DUE_TAG_DEAD_LETTERS = (
    f"SELECT m.*, {_STATE_COLUMNS}, s.tag AS t_tag FROM tag_states s"
    " /* indexed by tag_states_dl_due */ JOIN messages m ON m.id = s.message_id"
    " WHERE s.dl_due_at <= :now AND s.state = 'live' ORDER BY s.dl_due_at, s.seq LIMIT :limit"
    " FOR UPDATE OF s SKIP LOCKED"
)
# One row at a time, in the order given (oldest first), so that rows are locked in `seq` order.
EXTEND_LIFE = (
    "UPDATE messages SET expires_at = :expires_at"
    " WHERE id = :id AND project = :project AND expires_at < :expires_at"
)
FINAL_TAG_STATES = (
    "SELECT message_id, tag FROM tag_states WHERE message_id = ANY(:ids) AND state != 'live'"
)
FORGET_TAG_STATES = "DELETE FROM tag_states WHERE message_id = ANY(:ids)"
PURGE_TAG_STATES = "DELETE FROM tag_states WHERE project = :project AND queue = :queue"
LOCK_MESSAGES = f"SELECT * FROM {_BY_ID} WHERE id = ANY(:ids) ORDER BY id FOR UPDATE"
# What a tag may claim now, and what it holds.
TAG_READY = (
    "SELECT COUNT(*) AS n FROM messages m WHERE" + _UNSEEN
    + " AND m.expires_at > :now AND COALESCE(m.ready_at, m.enqueued_at) <= :now"
)  # fmt: skip
TAG_LIVE = (
    "SELECT COUNT(*) FILTER (WHERE s.claim_id IS NOT NULL AND s.claim_expires_at > :now)"
    " AS claimed, COUNT(*) FILTER (WHERE s.visible_at <= :now) AS ready"
    " FROM tag_states s JOIN messages m ON m.id = s.message_id WHERE s.project = :project"
    " AND s.queue = :queue AND s.tag = :tag AND s.state = 'live' AND m.expires_at > :now"
)
# The messages the untagged consumers are done with (see deadletter.domain.tags).
COUNT_DEFAULT_DONE = (
    "SELECT COUNT(*) AS n FROM messages /* indexed by messages_hidden */"
    f" WHERE project = :project AND queue = :queue AND {HIDDEN}"
    " AND visible_at >= :done AND expires_at > :now"
)
DEFAULT_DONE_IDS = (
    "SELECT id FROM messages /* indexed by messages_hidden */"
    f" WHERE project = :project AND queue = :queue AND {HIDDEN} AND visible_at >= :done"
)
MAX_QUEUE_SEQ = (
    "SELECT COALESCE(MAX(seq), 0) AS n FROM messages WHERE project = :project AND queue = :queue"
)
