-- The micro-batches merged into a DLQ's stored patterns, by writer: a JSON object
-- {"<writer id>": <last batch id>}. It sits beside the patterns, not in them, so a PUT of
-- the whole set (a batch analysis) keeps it, and it is read and written in the transaction
-- that merges a batch, so a replayed batch is recognised however many writers share a DLQ.
ALTER TABLE patterns ADD COLUMN batches TEXT NOT NULL DEFAULT '{}';
