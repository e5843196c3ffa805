-- A DLQ's automatic redrive policy: what it asks for (spec, JSON: filter, interval,
-- max_rounds, canary, rate), its state and the reason, when the next round is due, the task
-- of the round in flight (NULL when none is), and its counters and last round (JSON).
CREATE TABLE auto_redrives (
    project     TEXT NOT NULL,
    dlq         TEXT NOT NULL,
    spec        TEXT NOT NULL,
    state       TEXT NOT NULL,
    reason      TEXT,
    next_due    REAL NOT NULL,
    open_task   TEXT,
    progress    TEXT NOT NULL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (project, dlq)
);
CREATE INDEX auto_redrives_due ON auto_redrives (next_due) WHERE state = 'active';
