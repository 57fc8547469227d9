-- Task boards (GitHub, Jira, generic CSV/JSONL, tasks-as-files in git), with a Perceval-style
-- item envelope (uuid, origin, updated_on, category) so a GrimoireLab import needs no change.
CREATE TABLE IF NOT EXISTS tasks (
    task_ref      VARCHAR PRIMARY KEY,  -- e.g. KAFKA-1234, pallets/flask#123, tasks/foo.md
    uuid          VARCHAR NOT NULL,     -- sha1(origin + ':' + native id), as Perceval does
    origin        VARCHAR NOT NULL,     -- board URL or file path
    source        VARCHAR NOT NULL,     -- github | jira | csv | jsonl | git-files
    category      VARCHAR NOT NULL,     -- issue | pull_request | task | bug ...
    updated_on    TIMESTAMPTZ,
    title         VARCHAR,
    kind          VARCHAR,
    project       VARCHAR,              -- KAFKA, pallets/flask, ...
    created_at    TIMESTAMPTZ,
    completed_at  TIMESTAMPTZ,
    status        VARCHAR,
    resolution    VARCHAR,
    priority      VARCHAR,
    labels        VARCHAR[],
    raw           JSON NOT NULL,
    load_id       BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS task_events (
    task_ref  VARCHAR NOT NULL,
    "at"      TIMESTAMPTZ NOT NULL,  -- quoted: a reserved word in DuckDB
    kind      VARCHAR NOT NULL,  -- created | closed | reopened | labeled | status_changed | cross-referenced ...
    detail    VARCHAR,
    load_id   BIGINT NOT NULL,
    PRIMARY KEY (task_ref, "at", kind, detail)
);

CREATE TABLE IF NOT EXISTS task_links (
    task_ref   VARCHAR NOT NULL,
    target_ref VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,  -- e.g. Regression, is caused by, duplicates, relates
    direction  VARCHAR NOT NULL,  -- inward | outward
    load_id    BIGINT NOT NULL,
    PRIMARY KEY (task_ref, target_ref, kind, direction)
);

-- Which commits mention which task (built by agent_reflection.load.task_matcher).
CREATE TABLE IF NOT EXISTS task_commits (
    task_ref  VARCHAR NOT NULL,
    repo      VARCHAR NOT NULL,
    sha       VARCHAR NOT NULL,
    matched_by VARCHAR NOT NULL,  -- the matcher rule: jira-key | github-ref | task-ref ...
    PRIMARY KEY (task_ref, repo, sha)
);
