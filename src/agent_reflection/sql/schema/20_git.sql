-- Git histories: one row per commit and per (commit, file). Several repos live side by side.
-- Signal columns are derived by agent_reflection.load.git.signals (SIGNALS_VERSION).
CREATE TABLE IF NOT EXISTS commits (
    repo              VARCHAR NOT NULL,     -- a stable repo name (basename, or --name)
    sha               VARCHAR NOT NULL,
    parents           VARCHAR[] NOT NULL,
    author_name       VARCHAR,
    author_email      VARCHAR,
    author_time       TIMESTAMPTZ NOT NULL, -- instant, UTC
    author_tz_offset  INTEGER,              -- minutes east of UTC, as recorded
    committer_name    VARCHAR,
    committer_email   VARCHAR,
    committer_time    TIMESTAMPTZ NOT NULL,
    committer_tz_offset INTEGER,
    subject           VARCHAR NOT NULL,
    body              VARCHAR NOT NULL,
    is_merge          BOOLEAN NOT NULL,
    -- derived signals
    signals_version   INTEGER NOT NULL,
    is_revert         BOOLEAN NOT NULL,
    reverts_sha       VARCHAR,              -- 7–40 hex as written in the message
    is_reapply        BOOLEAN NOT NULL,
    pr_number         INTEGER,
    cc_type           VARCHAR,
    cc_scope          VARCHAR,
    cc_breaking       BOOLEAN NOT NULL,
    is_fix_like       BOOLEAN NOT NULL,
    files_available   BOOLEAN NOT NULL,     -- false when a missing object hid the file list
    load_id           BIGINT NOT NULL,
    -- the coding agent the commit's identities or message name (agent_reflection.load.git.agents,
    -- AGENT_PATTERNS_VERSION); NULL = no agent mark. Filled by every git load, old rows included.
    agent             VARCHAR,
    agent_version     INTEGER,              -- NULL: not matched yet (a row from an older load)
    PRIMARY KEY (repo, sha)
);
-- a database made before the agent columns (the next git load fills them for its old rows)
ALTER TABLE commits ADD COLUMN IF NOT EXISTS agent VARCHAR;
ALTER TABLE commits ADD COLUMN IF NOT EXISTS agent_version INTEGER;

-- Natural key (repo, sha, path), guaranteed by the loader rather than declared: a commit's files
-- are inserted in the same transaction as its `commits` row (whose PRIMARY KEY admits it once)
-- and paths are de-duplicated per commit. An ART index here costs about 40% of the insert time.
CREATE TABLE IF NOT EXISTS commit_files (
    repo     VARCHAR NOT NULL,
    sha      VARCHAR NOT NULL,
    path     VARCHAR NOT NULL,
    old_path VARCHAR,              -- set on renames
    added    INTEGER,              -- NULL for binary files
    deleted  INTEGER,
    "binary" BOOLEAN NOT NULL,    -- quoted: a reserved word in DuckDB
    load_id  BIGINT NOT NULL
);
