-- A DLQ's dead letters of one source queue, in seq order: a listing, a count or a redrive
-- step filtered by source reads only that source's dead letters, where it walked the whole
-- DLQ (4.4 s for 10 dead letters of a rare source behind a million others). Only dead
-- letters are in it, so a send or a claim of an ordinary queue writes nothing to it.
CREATE INDEX messages_dl_source ON messages (project, queue, dl_source, seq)
    WHERE dl_source IS NOT NULL;
