-- Queue templates: a project's name patterns and the settings they give new queues.
CREATE TABLE queue_templates (
    project     TEXT NOT NULL,
    name        TEXT NOT NULL,
    pattern     TEXT NOT NULL,
    settings    TEXT NOT NULL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (project, name)
);
