-- The counts of queue_depths (0005) are kept by the store's own statements, once per batch
-- (see SQLTransaction in transaction.py), instead of by a trigger on every row: a row-level
-- trigger cost a quarter of a batched send.
DROP TRIGGER messages_depth_insert ON messages;
DROP TRIGGER messages_depth_move ON messages;
DROP FUNCTION messages_depth();

-- How many subscriptions a queue has, read with the queue's row, so that a send to a queue
-- without any runs no query for them.
ALTER TABLE queues ADD COLUMN subscriptions INTEGER NOT NULL DEFAULT 0;
UPDATE queues SET subscriptions = (
    SELECT COUNT(*) FROM subscriptions s WHERE s.project = queues.project AND s.queue = queues.name
);
