-- The key of this database's redaction placeholders (HMAC-SHA256 over the secret): made at
-- random on the first load, never exported (sql/core/export_tables.sql leaves it out), so a
-- placeholder in an export or report cannot be used to confirm a guessed password.
CREATE TABLE IF NOT EXISTS redaction_key (
    key        BLOB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp
);
