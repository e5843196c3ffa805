"""Every statement of the SQL stores, written once, with named `:parameters`.

The text is PostgreSQL's where the two dialects differ; `Dialect.compile` rewrites the few
constructs SQLite spells otherwise (see `deadletter.storage.sqlite.dialect.SQLiteDialect`):

- `col = ANY(:ids)`: an id list, given as a Python list;
- `FOR UPDATE` (and `OF t`, `SKIP LOCKED`): row locks, which SQLite does not need;
- `starts_with(col, :prefix)`: prefix matching;
- `/* indexed by name */` after a table: an index SQLite must use (PostgreSQL has statistics);
- `IS NOT DISTINCT FROM`: SQLite's `IS`;
- `SHARD`: the shard of a count this connection writes (SQLite's transactions are serial:
  it keeps one).

Optional filters are written `(col = :x OR :x IS NULL)`: the comparison comes first so that
PostgreSQL learns the parameter's type from it before it meets `IS NULL`.
"""

from __future__ import annotations

import re

MESSAGE_FIELDS = (
    "id", "project", "queue", "seq", "body", "attributes", "enqueued_at", "expires_at",
    "visible_at", "claim_id", "claim_expires_at", "claim_count", "first_claimed_at", "client_id",
    "dl_eligible", "provenance", "dl_source", "dl_reason", "dl_at", "history", "dl_due_at",
    "group_id", "dedup_id", "ready_at", "only_tag", "dl_tag", "hidden",
)  # fmt: skip
TASK_FIELDS = (
    "id", "project", "dlq", "destination", "filter", "rate", "status", "moved", "to_move",
    "max_seq", "started_at", "updated_at", "failure_reason", "skipped", "skipped_ids",
    "cursor_seq", "canary", "transform",
)  # fmt: skip


def _insert(table: str, fields: tuple[str, ...]) -> str:
    return (
        f"INSERT INTO {table} ({', '.join(fields)}) VALUES ({', '.join(':' + f for f in fields)})"
    )


def _replacing(key: str, fields: tuple[str, ...]) -> str:
    """An upsert suffix that overwrites every other column of the row with `key`."""
    changes = ", ".join(f"{f} = excluded.{f}" for f in fields if f != key)
    return f" ON CONFLICT ({key}) DO UPDATE SET {changes}"


# Queues

GET_QUEUE = "SELECT * FROM queues WHERE project = :project AND name = :name"
# A read-modify-write of settings holds the row so that concurrent changes queue up.
GET_QUEUE_LOCKED = GET_QUEUE + " FOR UPDATE"
INSERT_QUEUE = _insert(
    "queues", ("project", "name", "settings", "dlq_target", "created_at", "updated_at")
)
UPDATE_QUEUE = (
    "UPDATE queues SET settings = :settings, dlq_target = :dlq_target, updated_at = :now"
    " WHERE project = :project AND name = :name"
)
DELETE_QUEUE = "DELETE FROM queues WHERE project = :project AND name = :name"
# What else goes with a queue (the numbering of its messages is the dialect's).
DELETE_QUEUE_ROWS = (
    "DELETE FROM messages WHERE project = :project AND queue = :name",
    "DELETE FROM queue_depths WHERE project = :project AND queue = :name",
    "DELETE FROM queue_hidden WHERE project = :project AND queue = :name",
    "DELETE FROM claims WHERE project = :project AND queue = :name",
    "DELETE FROM counters WHERE project = :project AND queue = :name",
    "DELETE FROM tasks WHERE project = :project AND dlq = :name",
    "DELETE FROM patterns WHERE project = :project AND dlq = :name",
    "DELETE FROM fifo_groups WHERE project = :project AND queue = :name",
    "DELETE FROM fifo_dedup WHERE project = :project AND queue = :name",
    "DELETE FROM tag_states WHERE project = :project AND queue = :name",
    "DELETE FROM tags WHERE project = :project AND queue = :name",
    "DELETE FROM saved_filters WHERE project = :project AND dlq = :name",
    "DELETE FROM archived_dead_letters WHERE project = :project AND dlq = :name",
    "DELETE FROM dead_letter_discards WHERE project = :project AND dlq = :name",
    "DELETE FROM auto_redrives WHERE project = :project AND dlq = :name",
)
# A tenant's queues in every project derived from its name (`<tenant>@<region>`) too.
COUNT_QUEUES = (
    "SELECT count(*) AS n FROM queues WHERE project = :project OR substr(project, 1, :n) = :prefix"
)
LIST_QUEUES = (
    "SELECT * FROM queues WHERE project = :project AND name > :after"
    " AND (starts_with(name, :prefix) OR :prefix IS NULL)"
    " ORDER BY name LIMIT :limit"
)
DEAD_LETTER_TARGETS = "SELECT * FROM queues WHERE project = :project AND dlq_target IS NOT NULL"

# Messages

INSERT_MESSAGE = _insert("messages", MESSAGE_FIELDS)
# Statements by id find their rows through the primary key on PostgreSQL too, whose
# statistics lag behind a queue that just filled (a fresh table looks empty): the queue's
# key is compared with IS NOT DISTINCT FROM (equality for these NOT NULL columns), which no
# index serves, so that the planner cannot walk the queue in seq order filtering it by id.
_OF_PROJECT = "project IS NOT DISTINCT FROM :project"
_OF_QUEUE = f"{_OF_PROJECT} AND queue IS NOT DISTINCT FROM :queue"
# A message moved to another queue, rewritten in place: every column but its id and body,
# which stays where it is.
MOVE_MESSAGE = (
    "UPDATE messages SET "
    + ", ".join(f"{f} = :{f}" for f in MESSAGE_FIELDS if f not in ("id", "project", "body"))
    + f" WHERE id = :id AND {_OF_PROJECT}"
)
# The columns a redrive sets alike on every message it sends back (`:now`, `:expires_at`,
# `:queue`); each dialect adds the id, number, attributes and history (`redrive_in_place`).
REDRIVEN_COLUMNS = (
    "queue = :queue, enqueued_at = :now, expires_at = :expires_at, visible_at = :visible_at,"
    " ready_at = :now, only_tag = :only_tag,"
    " claim_id = NULL, claim_expires_at = NULL, claim_count = 0, first_claimed_at = NULL,"
    " provenance = NULL, dl_source = NULL, dl_reason = NULL, dl_at = NULL, dl_due_at = NULL,"
    " dl_tag = NULL, hidden = :hidden"
)
# By primary key: without statistics SQLite would rather walk the whole queue in seq order.
_BY_ID = "messages /* indexed by sqlite_autoindex_messages_1 */"
GET_MESSAGES = f"SELECT * FROM {_BY_ID} WHERE id = ANY(:ids) AND {_OF_QUEUE} ORDER BY seq"
# The two classes of message of migrations 0005 and 0013, each spelled as its partial index's
# predicate (SQLite uses a partial index only for a query that repeats its WHERE term word for
# word). A claimed message becomes visible when its claim expires, after the retry policy's
# backoff where the queue has one (`visible_at = claim_expires_at + backoff`, written with the
# claim), so a hidden message is visible, claimed or not, exactly when `visible_at <= :now`;
# a ready one is always visible.
READY = "hidden = 0"
HIDDEN = "hidden > 0"
# A claim takes the oldest of both kinds (transaction.py merges them): ready messages in seq
# order from the head, and hidden ones whose time has come, by time then sorted; neither
# steps over the claimed or delayed messages in front of the ready ones.
CLAIMABLE_READY = (
    "SELECT * FROM messages /* indexed by messages_ready */"
    f" WHERE project = :project AND queue = :queue AND {READY}"
    " AND visible_at <= :now AND expires_at > :now"
    " ORDER BY seq LIMIT :limit FOR UPDATE SKIP LOCKED"
)
# Hidden messages are sorted by `seq + 0`, which no index yields: ordered by `seq` itself, a
# PostgreSQL planner that believes the queue small (statistics lag behind a queue that just
# filled) walks the whole queue in seq order to skip a sort of the few rows it returns.
BY_SEQ_SORTED = "ORDER BY seq + 0"
CLAIMABLE_HIDDEN = (
    "SELECT * FROM messages /* indexed by messages_hidden */"
    f" WHERE project = :project AND queue = :queue AND {HIDDEN}"
    " AND visible_at <= :now AND expires_at > :now"
    f" {BY_SEQ_SORTED} LIMIT :limit FOR UPDATE SKIP LOCKED"
)
# The filters of a DeadLetterFilter; each is off when its parameter is NULL.
_DEAD_LETTER_FILTER = (
    " AND (dl_source = :dl_source OR :dl_source IS NULL)"
    " AND (dl_reason = :dl_reason OR :dl_reason IS NULL)"
    " AND (dl_at >= :dl_since OR :dl_since IS NULL)"
    " AND (dl_at < :dl_until OR :dl_until IS NULL)"
    " AND (id = ANY(:dl_ids) OR :dl_ids IS NULL)"
)


# Dead letters of one source queue, through the index of migration 0016 in seq order, where
# a walk of the DLQ in seq order would step over every other source's dead letters.
_OF_SOURCE = "messages /* indexed by messages_dl_source */ WHERE dl_source = :dl_source AND"
_READY_OR_ANY = re.compile(r"messages (/\* indexed by messages_ready \*/ )?WHERE")


def by_source(sql: str) -> str:
    """`sql`, a statement with the dead-letter filters, narrowed to the dead letters of one
    source queue (`:dl_source`) by a plain equality that messages_dl_source serves (the
    optional filter's `OR :dl_source IS NULL` serves no index on SQLite). The hidden class
    keeps its statement: its range by time reads only what became visible since the sweep."""
    if "indexed by messages_hidden" in sql:
        return sql
    return _READY_OR_ANY.sub(_OF_SOURCE, sql, count=1)


def by_source_tag(sql: str) -> str:
    """`sql`, a statement with the dead-letter filters, narrowed to the dead letters of one
    consumer tag (`:dl_tag`); a variant of its own, so that the others keep their plans."""
    head, order, tail = sql.partition(" ORDER BY ")
    return f"{head} AND dl_tag = :dl_tag{order}{tail}"


# `max_seq` bounds the index range on both dialects, hence COALESCE rather than `OR IS NULL`.
LIST_MESSAGES = (
    "SELECT * FROM messages WHERE project = :project AND queue = :queue"
    " AND seq > :after_seq AND seq <= COALESCE(:max_seq, 9223372036854775807)"
    " AND expires_at > :now"
    " AND (:include_claimed OR NOT (claim_id IS NOT NULL AND claim_expires_at > :now))"
    " AND (:include_delayed OR NOT (visible_at > :now"
    " AND (claim_id IS NULL OR claim_expires_at <= :now)))"
    " AND (client_id IS NULL OR client_id != :exclude_client_id OR :exclude_client_id IS NULL)"
    + _DEAD_LETTER_FILTER
    + " ORDER BY seq LIMIT :limit"
)
# A listing of visible messages only (neither claimed nor delayed messages asked for) is the
# merge of the same two classes, so that it never steps over a claimed or delayed head.
LIST_READY = LIST_MESSAGES.replace(
    "FROM messages WHERE", f"FROM messages /* indexed by messages_ready */ WHERE {READY} AND"
)
LIST_HIDDEN = LIST_MESSAGES.replace(
    "FROM messages WHERE",
    f"FROM messages /* indexed by messages_hidden */ WHERE {HIDDEN} AND visible_at <= :now AND",
).replace("ORDER BY seq LIMIT", f"{BY_SEQ_SORTED} LIMIT")
DEAD_LETTERS = (
    "SELECT * FROM messages WHERE project = :project AND queue = :queue"
    " AND seq > :after_seq AND seq <= :max_seq AND expires_at > :now AND visible_at <= :now"
    + _DEAD_LETTER_FILTER
    + " ORDER BY seq LIMIT :limit"
)
DEAD_LETTERS_LOCKED = DEAD_LETTERS + " FOR UPDATE SKIP LOCKED"
DEAD_LETTER_SOURCES_LOCKED = DEAD_LETTERS_LOCKED.replace(
    "SELECT *", "SELECT id, queue, seq, dl_source, dl_tag, hidden"
)
DEAD_LETTER_PROVENANCES = DEAD_LETTERS.replace("SELECT *", "SELECT id, seq, provenance")
COUNT_DEAD_LETTERS = (
    "SELECT COUNT(*) AS n FROM messages WHERE project = :project AND queue = :queue"
    " AND seq <= :max_seq AND expires_at > :now" + _DEAD_LETTER_FILTER
)
MAX_SEQ = (
    "SELECT COALESCE(MAX(seq), 0) AS n FROM messages WHERE project = :project AND queue = :queue"
)
# The head of a queue, whatever its messages' state: what a bounded queue's drop-head
# pushes out (engine.bounds).
OLDEST = (
    "SELECT * FROM messages WHERE project = :project AND queue = :queue AND seq > :after"
    " AND expires_at > :now ORDER BY seq LIMIT :limit FOR UPDATE"
)
# The bytes a bounded queue's byte bound counts: its unexpired messages' bodies.
BODY_BYTES = (
    "SELECT COALESCE(SUM(LENGTH(body)), 0) AS n FROM messages"
    " WHERE project = :project AND queue = :queue AND expires_at > :now"
)
# A dead letter edited where it is (engine.edits): its place, state and counts stay.
EDIT_MESSAGE = (
    "UPDATE messages SET body = :body, attributes = :attributes, history = :history"
    f" WHERE id = :id AND {_OF_PROJECT}"
)
UPDATE_MESSAGE = (
    "UPDATE messages SET visible_at = :visible_at, claim_id = :claim_id,"
    " claim_expires_at = :claim_expires_at, claim_count = :claim_count,"
    " first_claimed_at = :first_claimed_at, expires_at = :expires_at, dl_due_at = :dl_due_at,"
    " hidden = :hidden WHERE id = :id"
)
# A claim's messages written back in one statement (`SQLTransaction.claim_messages`) where
# the engine claims them alike: `transitions.claimed` of each without a retry backoff
# (visible again when the claim lapses) and none at its last delivery (no DLQ due time).
CLAIM_MESSAGES = (
    "UPDATE messages SET claim_id = :claim_id, claim_expires_at = :expires,"
    " visible_at = :expires, claim_count = claim_count + 1,"
    " first_claimed_at = COALESCE(NULLIF(first_claimed_at, 0), :now),"
    " expires_at = CASE WHEN expires_at > :live_until THEN expires_at ELSE :live_until END,"
    " dl_due_at = NULL, hidden = :hidden WHERE id = ANY(:ids)"
)
# Deletions return the dead-letter source and class of each row, which the counts go by.
_GONE = " RETURNING COALESCE(dl_source, '') AS source, hidden"


def _deleted_in_seq_order(where: str) -> str:
    """A delete of the messages `where` picks, locking them in `seq` order (see PLACES_OF)
    where a plain DELETE would lock them in the order its scan finds them."""
    return (
        "DELETE FROM messages WHERE id IN"
        f" (SELECT id FROM {_BY_ID} WHERE {where} ORDER BY seq FOR UPDATE)" + _GONE
    )


DELETE_MESSAGES = _deleted_in_seq_order(f"id = ANY(:ids) AND {_OF_QUEUE}")
# A delete by ids whatever the claims, in one statement (`SQLTransaction.delete_unfinished`):
# what `get_messages` and `tags.not_done_by_default` would let the untagged consumers delete.
DELETE_UNFINISHED = _deleted_in_seq_order(
    f"id = ANY(:ids) AND {_OF_QUEUE} AND only_tag IS NULL AND visible_at < :done"
)
# An acknowledgement in one statement (`SQLTransaction.delete_held`): what `held_rows`,
# `tags.not_done_by_default` and `transitions.may_delete` would let the claim delete. Its
# `expires_at + 0` is no key of the expiry index: a PostgreSQL planner without fresh
# statistics took `expires_at > :now` for a narrow range and ANDed that index's bitmap,
# nearly every message of the table, to the claim's.
DELETE_HELD = (
    _deleted_in_seq_order(
        f"id = ANY(:ids) AND {_OF_QUEUE} AND claim_id = :claim"
        " AND expires_at + 0 > :now AND (:lapsed OR claim_expires_at > :now)"
        " AND only_tag IS NULL AND visible_at < :done"
    )
    + ", id"
)
PURGE_CLAIMS = "DELETE FROM claims WHERE project = :project AND queue = :queue"
PURGE_MESSAGES = "DELETE FROM messages WHERE project = :project AND queue = :queue" + _GONE
# Where the messages a write changes are, when the transaction did not read them locked
# (`Executor.places_before`): their queue, dead-letter source and class, which the counts go by.
#
# Every read or delete that locks several messages locks them in `seq` order, as a claim
# finds them: two writes on the same messages, a delete batch and a visibility batch of one
# receive say, then never each hold one that the other waits for (a deadlock, which
# PostgreSQL breaks only after `deadlock_timeout`, a second by default).
PLACES_OF = (
    f"SELECT id, queue, dl_source, hidden FROM {_BY_ID} WHERE id = ANY(:ids) AND {_OF_PROJECT}"
    " ORDER BY seq FOR UPDATE"
)
# Found through the partial index on claim_id (migration 0002): without statistics SQLite
# would rather walk the whole queue in seq order than sort the few messages of one claim.
CLAIMED_BY = (
    "SELECT * FROM messages /* indexed by messages_claim */"
    f" WHERE {_OF_QUEUE} AND claim_id = :claim_id {BY_SEQ_SORTED}"
)
# Reads a write starts from (a renewal, a give-back): the rows they return stay locked, so that
# no concurrent change between the read and the write is written over (`Transaction`).
GET_MESSAGES_LOCKED = GET_MESSAGES + " FOR UPDATE"
CLAIMED_BY_LOCKED = CLAIMED_BY + " FOR UPDATE"
EXPIRED = (
    "SELECT * FROM messages WHERE expires_at <= :now ORDER BY expires_at, seq LIMIT :limit"
    " FOR UPDATE SKIP LOCKED"
)
# Messages whose last allowed claim has lapsed (found through the partial index of 0006).
DUE_DEAD_LETTERS = (
    "SELECT * FROM messages WHERE dl_due_at <= :now ORDER BY dl_due_at, seq LIMIT :limit"
    " FOR UPDATE SKIP LOCKED"
)
# The shard of a count that this connection writes: on PostgreSQL each connection of a
# process has its own (`deadletter.shard`, set as the pool opens it), so that concurrent
# writers do not wait for one another's row until a commit; a reader sums the shards.
SHARD = "current_setting('deadletter.shard')::int"
# The depth of a queue by dead-letter source (migration 0005), changed by `n` once per
# statement that adds or removes its messages (see `SQLTransaction._add_depths`).
ADD_DEPTH = (
    "INSERT INTO queue_depths (project, queue, source, shard, n)"
    f" VALUES (:project, :queue, :source, {SHARD}, :n)"
    " ON CONFLICT (project, queue, source, shard) DO UPDATE SET n = queue_depths.n + excluded.n"
)
# How many messages of a queue are hidden, by class (migration 0013), kept as the depths are.
ADD_HIDDEN = (
    "INSERT INTO queue_hidden (project, queue, hidden, shard, n)"
    f" VALUES (:project, :queue, :hidden, {SHARD}, :n)"
    " ON CONFLICT (project, queue, hidden, shard) DO UPDATE SET n = queue_hidden.n + excluded.n"
)
# Stats read the counts of queue_depths and queue_hidden, less what has expired and waits for
# the sweep (found through the expiry index, so bounded by the sweep's backlog), and less the
# hidden messages that have become visible since the sweep last settled them (found through
# messages_hidden by time, so bounded by what became visible in one sweep interval).
DEPTHS = (
    "SELECT source, SUM(n) AS n FROM queue_depths WHERE project = :project AND queue = :queue"
    " GROUP BY source"
)
EXPIRED_DEPTHS = (
    "SELECT COALESCE(dl_source, '') AS source, hidden, COUNT(*) AS n"
    " FROM messages /* indexed by messages_expiry */"
    f" WHERE expires_at <= :now AND {_OF_QUEUE}"
    " GROUP BY COALESCE(dl_source, ''), hidden"
)
HIDDEN_COUNTS = (
    "SELECT hidden, SUM(n) AS n FROM queue_hidden WHERE project = :project AND queue = :queue"
    " GROUP BY hidden"
)
SHOWN_SINCE_SETTLED = (
    "SELECT hidden, COUNT(*) AS n FROM messages /* indexed by messages_hidden */"
    f" WHERE project = :project AND queue = :queue AND {HIDDEN}"
    " AND visible_at <= :now AND expires_at > :now GROUP BY hidden"
)
# Claims that have lapsed but whose messages still serve their backoff (`transitions.lapsed`):
# kept as claimed (class 2), counted as delayed. Their `visible_at` is at most `:backoff_end`,
# the lapse plus the longest backoff, so the range read is what becomes visible within it.
LAPSED_IN_BACKOFF = (
    "SELECT COUNT(*) AS n FROM messages /* indexed by messages_hidden */"
    f" WHERE project = :project AND queue = :queue AND {HIDDEN}"
    " AND visible_at > :now AND visible_at <= :backoff_end AND expires_at > :now"
    " AND claim_id IS NOT NULL AND claim_expires_at <= :now"
)
# The sweep's settling: queues that may hold hidden messages, then in each the hidden ones
# that have become visible, back to the ready class (the class they return is the old one).
HIDDEN_QUEUES = "SELECT project, queue FROM queue_hidden GROUP BY project, queue HAVING SUM(n) > 0"
SETTLE_HIDDEN = (
    "UPDATE messages SET hidden = 0 WHERE id IN (SELECT id FROM messages"
    f" /* indexed by messages_hidden */ WHERE project = :project AND queue = :queue AND {HIDDEN}"
    " AND visible_at <= :now LIMIT :limit FOR UPDATE SKIP LOCKED)"
    " RETURNING id, CASE WHEN claim_id IS NULL THEN 1 ELSE 2 END AS hidden"
)
NEXT_VISIBLE = (
    "SELECT MIN(visible_at) AS at FROM messages /* indexed by messages_hidden */"
    f" WHERE project = :project AND queue = :queue AND {HIDDEN}"
    " AND visible_at > :now AND expires_at > :now"
)
_LIVE = "SELECT * FROM messages WHERE project = :project AND queue = :queue AND expires_at > :now"
OLDEST_MESSAGE = _LIVE + " ORDER BY seq ASC LIMIT 1"
NEWEST_MESSAGE = _LIVE + " ORDER BY seq DESC LIMIT 1"

# Claims

INSERT_CLAIM = _insert(
    "claims", ("id", "project", "queue", "ttl", "grace", "created_at", "expires_at")
)
# A claim recorded by the step that takes its messages (`claim_next`), which may run again
# for the same claim when the first took messages for the DLQ.
RECORD_CLAIM = INSERT_CLAIM + " ON CONFLICT (id) DO NOTHING"
GET_CLAIM = "SELECT * FROM claims WHERE project = :project AND queue = :queue AND id = :id"
GET_CLAIM_LOCKED = GET_CLAIM + " FOR UPDATE"  # a renewal and a release take turns
UPDATE_CLAIM = (
    "UPDATE claims SET ttl = :ttl, grace = :grace, expires_at = :expires_at WHERE id = :id"
)
DELETE_CLAIM = "DELETE FROM claims WHERE project = :project AND queue = :queue AND id = :id"
DELETE_STALE_CLAIMS = "DELETE FROM claims WHERE expires_at <= :now"

# Counters

# Kept by shard, as the depths are (migration 0018).
BUMP_COUNTER = (
    "INSERT INTO counters (project, queue, name, shard, value)"
    f" VALUES (:project, :queue, :name, {SHARD}, :amount)"
    " ON CONFLICT (project, queue, name, shard)"
    " DO UPDATE SET value = counters.value + excluded.value"
)
COUNTERS = (
    "SELECT name, SUM(value) AS value FROM counters WHERE project = :project AND queue = :queue"
    " GROUP BY name"
)

# Redrive tasks

INSERT_TASK = _insert("tasks", TASK_FIELDS)
UPSERT_TASK = INSERT_TASK + _replacing("id", TASK_FIELDS)
GET_TASK = "SELECT * FROM tasks WHERE id = :id"
# Serialises the steps of one task between processes. On SQLite every transaction already
# holds the database's write lock from its start (BEGIN IMMEDIATE), so the row is locked too.
GET_TASK_LOCKED = GET_TASK + " FOR UPDATE"
LIST_TASKS = (
    "SELECT * FROM tasks WHERE project = :project AND (dlq = :dlq OR :dlq IS NULL)"
    " ORDER BY started_at DESC, id LIMIT :limit"
)
ACTIVE_TASK_IDS = (
    "SELECT id FROM tasks WHERE status IN ('RUNNING', 'CANCELLING') ORDER BY started_at"
)

# Failure patterns

SAVE_PATTERNS = (
    "INSERT INTO patterns (project, dlq, patterns) VALUES (:project, :dlq, :patterns)"
    " ON CONFLICT (project, dlq) DO UPDATE SET patterns = excluded.patterns"
)
GET_PATTERNS = "SELECT patterns FROM patterns WHERE project = :project AND dlq = :dlq"
SAVE_PATTERN_BATCHES = (
    "INSERT INTO patterns (project, dlq, patterns, batches) VALUES (:project, :dlq, '[]', :batches)"
    " ON CONFLICT (project, dlq) DO UPDATE SET batches = excluded.batches"
)
GET_PATTERN_BATCHES = "SELECT batches FROM patterns WHERE project = :project AND dlq = :dlq"

# Every table of data, children before parents (the numbering tables are the dialect's).
TABLES: tuple[str, ...] = (
    "queue_depths", "queue_hidden", "messages", "claims", "counters", "tasks", "patterns", "queues",
    "fifo_groups", "fifo_dedup", "tag_states", "tags", "saved_filters", "archived_dead_letters",
    "dead_letter_discards",
)  # fmt: skip

# Credentials (not in TABLES: a test-mode reset keeps who may use the server)

CREDENTIAL_FIELDS = (
    "key_id", "project", "role", "account_id", "sealed_secret", "created_at", "revoked",
)  # fmt: skip
INSERT_CREDENTIAL = _insert("credentials", CREDENTIAL_FIELDS)
GET_CREDENTIAL = "SELECT * FROM credentials WHERE key_id = :key_id"
GET_CREDENTIAL_LOCKED = GET_CREDENTIAL + " FOR UPDATE"
LIST_CREDENTIALS = (
    "SELECT * FROM credentials WHERE (project = :project OR :project IS NULL)"
    " ORDER BY created_at, key_id"
)
UPDATE_CREDENTIAL = (
    "UPDATE credentials SET role = :role, sealed_secret = :sealed_secret, revoked = :revoked"
    " WHERE key_id = :key_id"
)
# The projects already holding an account id: two projects never share one.
ACCOUNT_PROJECTS = "SELECT DISTINCT project FROM credentials WHERE account_id = :account_id"

# Queue templates (a test-mode reset removes them with the queues)

TABLES = (*TABLES, "queue_templates", "auto_redrives")
TEMPLATE_FIELDS = ("project", "name", "pattern", "settings", "created_at", "updated_at")
INSERT_TEMPLATE = (
    _insert("queue_templates", TEMPLATE_FIELDS) + " ON CONFLICT (project, name) DO NOTHING"
)
GET_TEMPLATE = "SELECT * FROM queue_templates WHERE project = :project AND name = :name"
LIST_TEMPLATES = "SELECT * FROM queue_templates WHERE project = :project ORDER BY name"
UPDATE_TEMPLATE = (
    "UPDATE queue_templates SET pattern = :pattern, settings = :settings,"
    " updated_at = :updated_at WHERE project = :project AND name = :name"
)
DELETE_TEMPLATE = "DELETE FROM queue_templates WHERE project = :project AND name = :name"
