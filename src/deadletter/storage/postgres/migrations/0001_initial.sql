-- deadletter schema, version 1 (PostgreSQL). Names compare byte-wise (COLLATE "C"), as in SQLite.
CREATE TABLE queues (
    project     TEXT NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    settings    TEXT NOT NULL,
    dlq_target  TEXT,
    created_at  DOUBLE PRECISION NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (project, name)
);
CREATE INDEX queues_dlq_target ON queues (project, dlq_target);

-- The next sequence number of each queue. A sender holds its queue's row until commit, so
-- sequence numbers are handed out in commit order and a marker never skips a late commit.
CREATE TABLE queue_sequences (
    project  TEXT NOT NULL,
    queue    TEXT NOT NULL,
    value    BIGINT NOT NULL,
    PRIMARY KEY (project, queue)
);

CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    project           TEXT NOT NULL,
    queue             TEXT NOT NULL,
    seq               BIGINT NOT NULL,
    body              BYTEA NOT NULL,
    attributes        TEXT NOT NULL,
    enqueued_at       DOUBLE PRECISION NOT NULL,
    expires_at        DOUBLE PRECISION NOT NULL,
    visible_at        DOUBLE PRECISION NOT NULL,
    claim_id          TEXT,
    claim_expires_at  DOUBLE PRECISION,
    claim_count       INTEGER NOT NULL,
    first_claimed_at  DOUBLE PRECISION,
    client_id         TEXT,
    dl_eligible       BOOLEAN NOT NULL,
    provenance        TEXT,
    dl_source         TEXT,
    dl_reason         TEXT,
    dl_at             DOUBLE PRECISION,
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
    created_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX claims_expiry ON claims (expires_at);

CREATE TABLE counters (
    project  TEXT NOT NULL,
    queue    TEXT NOT NULL,
    name     TEXT NOT NULL,
    value    BIGINT NOT NULL,
    PRIMARY KEY (project, queue, name)
);

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    project         TEXT NOT NULL,
    dlq             TEXT NOT NULL,
    destination     TEXT,
    filter          TEXT NOT NULL,
    rate            DOUBLE PRECISION,
    status          TEXT NOT NULL,
    moved           BIGINT NOT NULL,
    to_move         BIGINT NOT NULL,
    max_seq         BIGINT NOT NULL,
    started_at      DOUBLE PRECISION NOT NULL,
    updated_at      DOUBLE PRECISION NOT NULL,
    failure_reason  TEXT
);
CREATE INDEX tasks_dlq ON tasks (project, dlq, started_at);
CREATE INDEX tasks_active ON tasks (status) WHERE status IN ('RUNNING', 'CANCELLING');

CREATE TABLE patterns (
    project   TEXT NOT NULL,
    dlq       TEXT NOT NULL,
    patterns  TEXT NOT NULL,
    PRIMARY KEY (project, dlq)
);
