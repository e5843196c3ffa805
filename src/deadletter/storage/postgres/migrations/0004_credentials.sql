-- Credentials: a key id, its secret sealed under the server's master key, one project and role.
CREATE TABLE credentials (
    key_id         TEXT PRIMARY KEY,
    project        TEXT NOT NULL,
    role           TEXT NOT NULL,
    account_id     TEXT NOT NULL,
    sealed_secret  TEXT NOT NULL,
    created_at     DOUBLE PRECISION NOT NULL,
    revoked        BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX credentials_project ON credentials (project);
CREATE INDEX credentials_account ON credentials (account_id);
