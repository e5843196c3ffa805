-- Credentials: a key id, its secret sealed under the server's master key, one project and role.
CREATE TABLE credentials (
    key_id         TEXT PRIMARY KEY,
    project        TEXT NOT NULL,
    role           TEXT NOT NULL,
    account_id     TEXT NOT NULL,
    sealed_secret  TEXT NOT NULL,
    created_at     REAL NOT NULL,
    revoked        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX credentials_project ON credentials (project);
CREATE INDEX credentials_account ON credentials (account_id);
