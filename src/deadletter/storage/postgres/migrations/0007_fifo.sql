-- FIFO queues. A message carries its group and deduplication ids; a claim finds a group's
-- messages in order through `messages_group`. `fifo_groups` holds one row per group that a
-- claim has met: a claimant locks the rows of the groups it serves, so that two concurrent
-- claims never hand out messages of one group (SQLite needs no lock: its writers are serial).
-- `fifo_dedup` remembers each deduplication id for the deduplication interval, with the
-- message it named, by scope ('' for the whole queue, else the message group).
ALTER TABLE messages ADD COLUMN group_id TEXT;
ALTER TABLE messages ADD COLUMN dedup_id TEXT;
CREATE INDEX messages_group ON messages (project, queue, group_id, seq)
    WHERE group_id IS NOT NULL;

CREATE TABLE fifo_groups (
    project   TEXT NOT NULL,
    queue     TEXT NOT NULL,
    group_id  TEXT NOT NULL,
    PRIMARY KEY (project, queue, group_id)
);

CREATE TABLE fifo_dedup (
    project     TEXT NOT NULL,
    queue       TEXT NOT NULL,
    scope       TEXT NOT NULL,
    dedup_id    TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (project, queue, scope, dedup_id)
);
CREATE INDEX fifo_dedup_expiry ON fifo_dedup (project, queue, expires_at);
