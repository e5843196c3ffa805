-- The messages of a claim are found by its id alone, and only claimed messages need the entry:
-- a partial index keeps sends and unclaimed moves from writing one.
DROP INDEX messages_claim;
CREATE INDEX messages_claim ON messages (claim_id) WHERE claim_id IS NOT NULL;
