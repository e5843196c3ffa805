-- A consumer tag's last allowed claim, marked due for the DLQ when it lapses, as
-- messages.dl_due_at marks the untagged consumers' (0006): the sweep moves both.
ALTER TABLE tag_states ADD COLUMN dl_due_at DOUBLE PRECISION;
CREATE INDEX tag_states_dl_due ON tag_states (dl_due_at) WHERE dl_due_at IS NOT NULL;
