-- Stats that cost the same however many messages are claimed or delayed.
--
-- `hidden` says which class a message is in: 0 ready (0005's ready class), 1 hidden
-- without a claim (delayed, given back with a delay), 2 hidden with a claim. Writers set it
-- from the message as they write it; the sweep sets it back to 0 once the message has become
-- visible (a claim lapsed, a delay ended), which the class by itself never did: a message
-- once claimed stayed hidden for good, so the count of hidden ones grew with the queue.
-- A message with hidden = 0 is visible, so the two partial indexes still split the queue.
ALTER TABLE messages ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET hidden = CASE WHEN claim_id IS NOT NULL THEN 2 ELSE 1 END
    WHERE claim_id IS NOT NULL OR visible_at > COALESCE(dl_at, enqueued_at);
DROP INDEX messages_ready;
DROP INDEX messages_hidden;
CREATE INDEX messages_ready ON messages (project, queue, seq) WHERE hidden = 0;
CREATE INDEX messages_hidden ON messages (project, queue, visible_at) WHERE hidden > 0;

-- How many messages of each queue have hidden = 1 or 2, kept by the statements that change
-- them as queue_depths is (sharded the same way); stats take off those that have become
-- visible since the sweep last passed, found through messages_hidden.
CREATE TABLE queue_hidden (
    project  TEXT NOT NULL,
    queue    TEXT NOT NULL,
    hidden   INTEGER NOT NULL,
    shard    INTEGER NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (project, queue, hidden, shard)
);
INSERT INTO queue_hidden (project, queue, hidden, shard, n)
    SELECT project, queue, hidden, 0, COUNT(*) FROM messages WHERE hidden > 0
    GROUP BY project, queue, hidden;
