-- The running and cancelling redrive tasks, as on PostgreSQL since version 1.
CREATE INDEX tasks_active ON tasks (status) WHERE status IN ('RUNNING', 'CANCELLING');
