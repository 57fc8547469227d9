-- SZZ attribution of fix-like commits (agent_reflection.load.git.szz, SZZ_VERSION; docs/git.md
-- "Which commit introduced what a fix fixes"). Filled by `reflect load git --szz`.

-- One row per (fix, introducing commit, path in the fix), or one row per fix with no candidate
-- (introducing_sha and path NULL, lines 0, method saying why). Natural key (repo, fix_sha,
-- introducing_sha, path), guaranteed by the loader: a fix's rows land in one transaction and a
-- fix with rows is never attributed again.
CREATE TABLE IF NOT EXISTS fix_inducing (
    repo                 VARCHAR NOT NULL,
    fix_sha              VARCHAR NOT NULL,  -- commits.sha of a fix-like, non-merge commit
    introducing_sha      VARCHAR,           -- the commit that last touched the blamed lines
    path                 VARCHAR,           -- the file in the fix (new name after a rename)
    lines                INTEGER NOT NULL,  -- deleted/changed code lines blamed to it there
    method               VARCHAR NOT NULL,  -- blame | no-deleted-lines | no-code-files | root-commit | shallow-boundary | before-horizon
    gap_days             DOUBLE,            -- fix committer time - introducing committer time
    introducing_is_merge BOOLEAN,           -- the candidate is a merge commit
    introducing_is_bulk  BOOLEAN,           -- the candidate is huge (BULK_MIN_FILES / _LINES)
    szz_version          INTEGER NOT NULL,
    load_id              BIGINT NOT NULL
);

-- One row per (fix, file): how many of its added / deleted lines are code, and how many are
-- cosmetic (blank, comment, docstring, whitespace-only change; every line of a non-code file).
-- Since SZZ_VERSION 2 also one row per (revert, file) for non-merge reverts that are not
-- fix-like (their diff only: nothing of theirs is blamed, they have no fix_inducing rows).
CREATE TABLE IF NOT EXISTS fix_changes (
    repo                   VARCHAR NOT NULL,
    fix_sha                VARCHAR NOT NULL,
    path                   VARCHAR NOT NULL,  -- path after the fix
    old_path               VARCHAR,           -- the old name of a rename, else NULL
    kind                   VARCHAR NOT NULL,  -- code | docs | changelog | lockfile | license | meta | media | binary | submodule
    is_code                BOOLEAN NOT NULL,  -- kind = 'code'
    code_lines_added       INTEGER NOT NULL,
    code_lines_deleted     INTEGER NOT NULL,
    cosmetic_lines_added   INTEGER NOT NULL,
    cosmetic_lines_deleted INTEGER NOT NULL,
    version_lines          INTEGER,           -- code lines (both sides) that only set a version string; NULL: loaded before SZZ_VERSION 2
    text_lines             INTEGER,           -- code lines (both sides) changed only inside string literals (markup: text between tags); NULL: loaded before SZZ_VERSION 3
    szz_version            INTEGER NOT NULL,
    load_id                BIGINT NOT NULL
);
-- a database made before SZZ_VERSION 2
ALTER TABLE fix_changes ADD COLUMN IF NOT EXISTS version_lines INTEGER;
-- a database made before SZZ_VERSION 3
ALTER TABLE fix_changes ADD COLUMN IF NOT EXISTS text_lines INTEGER;
