-- Failure groups as units: filters saved on a DLQ by name; dead letters archived out of its
-- active view (out of `messages`, so no count, claim, expiry or redrive sees them) until
-- `keep_until`; and the log of what left a DLQ for good, and why.
CREATE TABLE saved_filters (
    project     TEXT NOT NULL,
    dlq         TEXT NOT NULL,
    name        TEXT NOT NULL,
    filter      TEXT NOT NULL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (project, dlq, name)
);
CREATE TABLE archived_dead_letters (
    id           TEXT PRIMARY KEY,
    project      TEXT NOT NULL,
    dlq          TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    body         BLOB NOT NULL,
    message      TEXT NOT NULL,
    archived_at  REAL NOT NULL,
    keep_until   REAL NOT NULL
);
CREATE INDEX archived_dead_letters_dlq ON archived_dead_letters (project, dlq, seq);
CREATE INDEX archived_dead_letters_keep ON archived_dead_letters (keep_until);
CREATE TABLE dead_letter_discards (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    dlq         TEXT NOT NULL,
    kind        TEXT NOT NULL,
    at          REAL NOT NULL,
    by_whom     TEXT,
    reason      TEXT NOT NULL,
    selection   TEXT NOT NULL,
    count       INTEGER NOT NULL,
    sample_ids  TEXT NOT NULL
);
CREATE INDEX dead_letter_discards_dlq ON dead_letter_discards (project, dlq, at);
