-- Zaqar subscriptions (webhooks), and the notifications owed to them: one row per message and
-- subscriber until it is delivered or given up, so that a restart resumes it.
CREATE TABLE subscriptions (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    queue       TEXT NOT NULL,
    subscriber  TEXT NOT NULL,
    ttl         BIGINT NOT NULL,
    options     TEXT NOT NULL,
    confirmed   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE UNIQUE INDEX subscriptions_subscriber ON subscriptions (project, queue, subscriber);
CREATE INDEX subscriptions_expiry ON subscriptions (expires_at);
CREATE TABLE deliveries (
    id               TEXT PRIMARY KEY,
    project          TEXT NOT NULL,
    queue            TEXT NOT NULL,
    subscription_id  TEXT NOT NULL,
    subscriber       TEXT NOT NULL,
    options          TEXT NOT NULL,
    message_id       TEXT NOT NULL,
    body             BYTEA NOT NULL,
    ttl              BIGINT NOT NULL,
    enqueued_at      DOUBLE PRECISION NOT NULL,
    due_at           DOUBLE PRECISION NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    last_error       TEXT
);
CREATE INDEX deliveries_due ON deliveries (due_at);
CREATE INDEX deliveries_subscription ON deliveries (subscription_id);
CREATE INDEX deliveries_queue ON deliveries (project, queue);
