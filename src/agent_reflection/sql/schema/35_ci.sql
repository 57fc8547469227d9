-- CI results per commit (GitHub check runs, workflow runs, jobs, commit statuses, gh run list,
-- JUnit XML reports). Written by agent_reflection.load.ci (docs/loading.md); read by P2, whose CI
-- bucket uses them when present.
CREATE TABLE IF NOT EXISTS ci_runs (
    repo        VARCHAR NOT NULL,  -- owner/repo as GitHub names it (or --repo)
    sha         VARCHAR NOT NULL,  -- the full commit id CI ran on, lower-case
    kind        VARCHAR NOT NULL,  -- workflow_run | job | check_run | status | junit
    name        VARCHAR NOT NULL,  -- workflow / job / check name, status context, test suite
    run_id      VARCHAR NOT NULL,  -- the native id ('' when the source has none)
    attempt     INTEGER NOT NULL,  -- re-runs of one workflow run are attempts 2, 3, ...
    status      VARCHAR,           -- queued | in_progress | completed | pending (as reported)
    conclusion  VARCHAR,           -- success | failure | cancelled | skipped | timed_out | error
                                   -- | neutral | ... lower-case as reported; NULL while running
    started     TIMESTAMPTZ,
    finished    TIMESTAMPTZ,
    url         VARCHAR,
    branch      VARCHAR,
    event       VARCHAR,           -- push | pull_request | ... when the source says
    fingerprint VARCHAR NOT NULL,  -- sha1 of the stored fields: a re-load compares it
    raw         JSON NOT NULL,     -- the native record
    source_file VARCHAR NOT NULL,  -- file (and record) it was read from
    load_id     BIGINT NOT NULL,
    PRIMARY KEY (repo, sha, kind, name, run_id, attempt)
);
