-- Failure groups as units: filters saved on a DLQ by name; dead letters archived out of its
-- active view (out of `messages`, so no count, claim, expiry or redrive sees them) until
-- `keep_until`; and the log of what left a DLQ for good, and why.
CREATE TABLE saved_filters (
    project     TEXT NOT NULL,
    dlq         TEXT NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    filter      TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (project, dlq, name)
);
CREATE TABLE archived_dead_letters (
    id           TEXT PRIMARY KEY,
    project      TEXT NOT NULL,
    dlq          TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    body         BYTEA NOT NULL,
    message      TEXT NOT NULL,
    archived_at  DOUBLE PRECISION NOT NULL,
    keep_until   DOUBLE PRECISION NOT NULL
);
CREATE INDEX archived_dead_letters_dlq ON archived_dead_letters (project, dlq, seq);
CREATE INDEX archived_dead_letters_keep ON archived_dead_letters (keep_until);
CREATE TABLE dead_letter_discards (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    dlq         TEXT NOT NULL,
    kind        TEXT NOT NULL,
    at          DOUBLE PRECISION NOT NULL,
    by_whom     TEXT,
    reason      TEXT NOT NULL,
    selection   TEXT NOT NULL,
    count       BIGINT NOT NULL,
    sample_ids  TEXT NOT NULL
);
CREATE INDEX dead_letter_discards_dlq ON dead_letter_discards (project, dlq, at);
