-- deadletter schema, version 1 (SQLite)
CREATE TABLE queues (
    project     TEXT NOT NULL,
    name        TEXT NOT NULL,
    settings    TEXT NOT NULL,
    dlq_target  TEXT,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (project, name)
);
CREATE INDEX queues_dlq_target ON queues (project, dlq_target);

CREATE TABLE message_sequence (value INTEGER NOT NULL);
INSERT INTO message_sequence (value) VALUES (0);

CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    project           TEXT NOT NULL,
    queue             TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    body              BLOB NOT NULL,
    attributes        TEXT NOT NULL,
    enqueued_at       REAL NOT NULL,
    expires_at        REAL NOT NULL,
    visible_at        REAL NOT NULL,
    claim_id          TEXT,
    claim_expires_at  REAL,
    claim_count       INTEGER NOT NULL,
    first_claimed_at  REAL,
    client_id         TEXT,
    dl_eligible       INTEGER NOT NULL,
    provenance        TEXT,
    dl_source         TEXT,
    dl_reason         TEXT,
    dl_at             REAL,
    history           TEXT NOT NULL
);
CREATE INDEX messages_queue_seq ON messages (project, queue, seq);
CREATE INDEX messages_expiry ON messages (expires_at);
CREATE INDEX messages_claim ON messages (project, queue, claim_id);

CREATE TABLE claims (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    queue       TEXT NOT NULL,
    ttl         INTEGER NOT NULL,
    grace       INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX claims_expiry ON claims (expires_at);

CREATE TABLE counters (
    project  TEXT NOT NULL,
    queue    TEXT NOT NULL,
    name     TEXT NOT NULL,
    value    INTEGER NOT NULL,
    PRIMARY KEY (project, queue, name)
);

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    project         TEXT NOT NULL,
    dlq             TEXT NOT NULL,
    destination     TEXT,
    filter          TEXT NOT NULL,
    rate            REAL,
    status          TEXT NOT NULL,
    moved           INTEGER NOT NULL,
    to_move         INTEGER NOT NULL,
    max_seq         INTEGER NOT NULL,
    started_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    failure_reason  TEXT
);
CREATE INDEX tasks_dlq ON tasks (project, dlq, started_at);

CREATE TABLE patterns (
    project   TEXT NOT NULL,
    dlq       TEXT NOT NULL,
    patterns  TEXT NOT NULL,
    PRIMARY KEY (project, dlq)
);
