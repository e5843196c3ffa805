-- A redrive task may check itself with a canary: its sample, watch and verdict, as JSON.
ALTER TABLE tasks ADD COLUMN canary TEXT;
