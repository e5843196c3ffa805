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
-- Each server connection writes its own shard of a count, so that concurrent senders and
-- deleters rarely wait for one another's row; a reader sums the shards.
CREATE TABLE queue_depths (
    project  TEXT NOT NULL,
    queue    TEXT NOT NULL,
    source   TEXT NOT NULL,
    shard    INTEGER NOT NULL,
    n        BIGINT NOT NULL,
    PRIMARY KEY (project, queue, source, shard)
);
INSERT INTO queue_depths (project, queue, source, shard, n)
    SELECT project, queue, COALESCE(dl_source, ''), 0, COUNT(*) FROM messages
    GROUP BY project, queue, COALESCE(dl_source, '');

CREATE FUNCTION messages_depth() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s INTEGER := pg_backend_pid() % 16;
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO queue_depths AS d (project, queue, source, shard, n)
            VALUES (OLD.project, OLD.queue, COALESCE(OLD.dl_source, ''), s, -1)
            ON CONFLICT (project, queue, source, shard) DO UPDATE SET n = d.n - 1;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO queue_depths AS d (project, queue, source, shard, n)
            VALUES (NEW.project, NEW.queue, COALESCE(NEW.dl_source, ''), s, 1)
            ON CONFLICT (project, queue, source, shard) DO UPDATE SET n = d.n + 1;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_depth_insert AFTER INSERT OR DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION messages_depth();
CREATE TRIGGER messages_depth_move AFTER UPDATE OF project, queue, dl_source ON messages
    FOR EACH ROW
    WHEN (OLD.project IS DISTINCT FROM NEW.project OR OLD.queue IS DISTINCT FROM NEW.queue
          OR OLD.dl_source IS DISTINCT FROM NEW.dl_source)
    EXECUTE FUNCTION messages_depth();
