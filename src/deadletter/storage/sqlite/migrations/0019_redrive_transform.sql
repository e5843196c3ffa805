-- A redrive task may edit each dead letter it moves: a patch, as JSON (type, document).
ALTER TABLE tasks ADD COLUMN transform TEXT;
