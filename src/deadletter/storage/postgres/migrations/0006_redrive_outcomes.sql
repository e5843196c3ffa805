-- A redrive task records what it skipped and how far it has looked, and a message held by its
-- last allowed delivery carries the time its claim lapses, for the sweep to dead-letter it.
ALTER TABLE tasks ADD COLUMN skipped BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN skipped_ids TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tasks ADD COLUMN cursor_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN dl_due_at DOUBLE PRECISION;
CREATE INDEX messages_dl_due ON messages (dl_due_at) WHERE dl_due_at IS NOT NULL;
