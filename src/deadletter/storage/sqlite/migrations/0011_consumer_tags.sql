-- Consumer tags: named consumer groups on one queue, each with its own deliveries.
--
-- A send writes nothing for tags: a tag has a row in tag_states only for the messages it has
-- touched (claimed, acknowledged, dead-lettered, or skipped by its filter). A message with
-- no row for a tag, above the tag's start, is one the tag has not received yet; the tag's
-- cursor_seq is how far every message has a row (or is not the tag's), so that its claims
-- read on from there instead of stepping over what it has already done.
CREATE TABLE tags (
    project           TEXT NOT NULL,
    queue             TEXT NOT NULL,
    name              TEXT NOT NULL,
    created_at        REAL NOT NULL,
    start_seq         INTEGER NOT NULL,
    start_at          REAL NOT NULL,
    filter_attribute  TEXT,
    filter_value      TEXT,
    cursor_seq        INTEGER NOT NULL,
    PRIMARY KEY (project, queue, name)
);
CREATE TABLE tag_states (
    message_id        TEXT NOT NULL,
    tag               TEXT NOT NULL,
    project           TEXT NOT NULL,
    queue             TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    state             TEXT NOT NULL,
    claim_id          TEXT,
    claim_expires_at  REAL,
    visible_at        REAL NOT NULL,
    claim_count       INTEGER NOT NULL,
    first_claimed_at  REAL,
    PRIMARY KEY (message_id, tag)
);
CREATE INDEX tag_states_tag ON tag_states (project, queue, tag, seq);
-- What a tag delivers again: messages it holds or was given back, by the time they are due.
CREATE INDEX tag_states_live ON tag_states (project, queue, tag, visible_at)
    WHERE state = 'live';
CREATE INDEX tag_states_claim ON tag_states (project, queue, tag, claim_id)
    WHERE claim_id IS NOT NULL;

-- When a message first became visible (tags go by it: visible_at is the untagged consumers'),
-- the one tag a redriven dead letter is for, and the tag a dead letter came from (filters).
ALTER TABLE messages ADD COLUMN ready_at REAL;
ALTER TABLE messages ADD COLUMN only_tag TEXT;
ALTER TABLE messages ADD COLUMN dl_tag TEXT;
