-- Sessions linked to the commits they produced, and each session's outcome in the history that
-- followed (agent_reflection.load.sessions; docs/loading.md "Sessions, commits and outcomes").
-- Both are derived: `reflect load git` recomputes a repo's rows from `reflections`, `git_notes`,
-- `commits`, `commit_files`, `fix_inducing` and the board tables, with the pre-registered
-- windows ([p1] loop_* keys) recorded on every outcome row.
CREATE TABLE IF NOT EXISTS session_commits (
    session_id VARCHAR NOT NULL,   -- reflections.session_id
    repo       VARCHAR NOT NULL,   -- commits.repo
    sha        VARCHAR NOT NULL,   -- commits.sha
    link       VARCHAR NOT NULL,   -- during-session | note | file-overlap (the strongest found)
    confidence DOUBLE NOT NULL,    -- 1 for during-session and note; Jaccard of file sets for file-overlap
    load_id    BIGINT NOT NULL,
    PRIMARY KEY (session_id, repo, sha)
);

CREATE TABLE IF NOT EXISTS session_outcomes (
    session_id      VARCHAR NOT NULL,
    repo            VARCHAR NOT NULL,
    outcome         VARCHAR NOT NULL,   -- wrong | right-so-far | censored
    rule            VARCHAR NOT NULL,   -- reverted | szz-fix | reopened-task (wrong); short-follow-up (censored); none
    commit_sha      VARCHAR,            -- the session's commit the evidence is about (wrong: the first hit)
    evidence_sha    VARCHAR,            -- the revert or fix commit (NULL for a reopened task)
    evidence_task   VARCHAR,            -- the reopened task (reopened-task only)
    evidence_time   TIMESTAMPTZ,        -- when the evidence happened
    evidence        JSON NOT NULL,      -- every piece of evidence: [{commit, rule, by, task, at}, ...]
    n_commits       INTEGER NOT NULL,   -- the session's linked commits in this repo
    last_commit_time TIMESTAMPTZ NOT NULL,
    as_of           TIMESTAMPTZ NOT NULL, -- the repo's last commit time
    window_days     INTEGER NOT NULL,   -- p1.loop_window_days used
    ignore_cosmetic_fixes BOOLEAN NOT NULL, -- p1.loop_ignore_cosmetic_fixes used
    szz_loaded      BOOLEAN NOT NULL,   -- whether `--szz` had attributed this repo's fixes
    load_id         BIGINT NOT NULL,
    PRIMARY KEY (session_id, repo)
);
