-- Claims, listings and stats that cost the same at any depth of a queue.
--
-- A message is "ready" while it has never been hidden since it got its place in the queue:
-- no claim, and visible from the moment it was sent or dead-lettered. Every other message
-- (claimed, delayed, given back) is "hidden" and indexed by the time it becomes visible.
-- The two partial indexes split the queue exactly: a claim walks the ready ones in order
-- and finds the hidden ones that became visible by time, never stepping over messages that
-- are claimed or delayed.
CREATE INDEX messages_ready ON messages (project, queue, seq)
    WHERE claim_id IS NULL AND visible_at <= COALESCE(dl_at, enqueued_at);
CREATE INDEX messages_hidden ON messages (project, queue, visible_at)
    WHERE claim_id IS NOT NULL OR visible_at > COALESCE(dl_at, enqueued_at);

-- How many messages each queue holds, by dead-letter source ('' for none), kept by
-- triggers in the transaction that changes the messages, so stats never count a queue.
-- PostgreSQL spreads each count over shards so that concurrent writers rarely share a row.
CREATE TABLE queue_depths (
    project  TEXT NOT NULL,
    queue    TEXT NOT NULL,
    source   TEXT NOT NULL,
    shard    INTEGER NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (project, queue, source, shard)
);
INSERT INTO queue_depths (project, queue, source, shard, n)
    SELECT project, queue, COALESCE(dl_source, ''), 0, COUNT(*) FROM messages
    GROUP BY project, queue, COALESCE(dl_source, '');

CREATE TRIGGER messages_depth_insert AFTER INSERT ON messages BEGIN
    INSERT INTO queue_depths (project, queue, source, shard, n)
        VALUES (NEW.project, NEW.queue, COALESCE(NEW.dl_source, ''), 0, 1)
        ON CONFLICT (project, queue, source, shard) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER messages_depth_delete AFTER DELETE ON messages BEGIN
    UPDATE queue_depths SET n = n - 1 WHERE project = OLD.project AND queue = OLD.queue
        AND source = COALESCE(OLD.dl_source, '') AND shard = 0;
END;
CREATE TRIGGER messages_depth_move AFTER UPDATE OF project, queue, dl_source ON messages
WHEN OLD.project IS NOT NEW.project OR OLD.queue IS NOT NEW.queue
    OR OLD.dl_source IS NOT NEW.dl_source
BEGIN
    UPDATE queue_depths SET n = n - 1 WHERE project = OLD.project AND queue = OLD.queue
        AND source = COALESCE(OLD.dl_source, '') AND shard = 0;
    INSERT INTO queue_depths (project, queue, source, shard, n)
        VALUES (NEW.project, NEW.queue, COALESCE(NEW.dl_source, ''), 0, 1)
        ON CONFLICT (project, queue, source, shard) DO UPDATE SET n = n + 1;
END;
