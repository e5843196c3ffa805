-- Named counters by shard, as queue_depths and queue_hidden are (queries.SHARD): on
-- PostgreSQL each connection bumps its own row, so the consumers of one queue do not wait for
-- one another's commit to count an acknowledgement; a reader sums the shards.
CREATE TABLE counters_by_shard (
    project  TEXT NOT NULL,
    queue    TEXT NOT NULL,
    name     TEXT NOT NULL,
    shard    INTEGER NOT NULL,
    value    INTEGER NOT NULL,
    PRIMARY KEY (project, queue, name, shard)
);
INSERT INTO counters_by_shard (project, queue, name, shard, value)
    SELECT project, queue, name, 0, value FROM counters;
DROP TABLE counters;
ALTER TABLE counters_by_shard RENAME TO counters;
