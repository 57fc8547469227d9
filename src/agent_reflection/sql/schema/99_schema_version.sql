-- What the schema DDL (every sql/schema/*.sql file, this one included) last did to this file:
-- the digest of those files and a fingerprint of the columns and sequences it left. While both
-- still match, db.connect skips the DDL (about 25 ms of every command that opens the file).
CREATE TABLE IF NOT EXISTS schema_version (
    digest      VARCHAR NOT NULL,   -- sha256 over the DDL files' names and text
    fingerprint UBIGINT NOT NULL,   -- sql/core/schema_fingerprint.sql after the DDL ran
    applied_at  TIMESTAMPTZ NOT NULL
);
