-- Messages are numbered from one sequence instead of a counter row per queue, so that
-- concurrent senders to one queue no longer wait for each other's commits. A listing waits
-- for the senders of its queue that are still in flight instead (see backend.py). CACHE 1
-- (the default) keeps the numbers increasing in the order they are taken, across sessions.
-- It starts above every number handed out so far, so markers of every queue stay valid.
CREATE SEQUENCE message_seq AS BIGINT CACHE 1;
SELECT setval('message_seq', GREATEST(
    (SELECT COALESCE(MAX(value), 0) FROM queue_sequences),
    (SELECT COALESCE(MAX(seq), 0) FROM messages),
    1
));
DROP TABLE queue_sequences;
