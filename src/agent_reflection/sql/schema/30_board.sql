-- Task boards (GitHub, Jira, generic CSV/JSONL, tasks-as-files in git), with a Perceval-style
-- item envelope (uuid, origin, updated_on, category) so a GrimoireLab import needs no change.
-- Written by agent_reflection.load.board (docs/boards.md).
CREATE TABLE IF NOT EXISTS tasks (
    task_ref      VARCHAR PRIMARY KEY,  -- e.g. KAFKA-1234, pallets/flask#123, tasks/foo.md
    uuid          VARCHAR NOT NULL,     -- sha1(origin + ':' + native id), as Perceval does
    origin        VARCHAR NOT NULL,     -- board URL or file name (--origin overrides)
    source        VARCHAR NOT NULL,     -- github | jira | csv | jsonl | git-files
    category      VARCHAR NOT NULL,     -- issue | pull_request | task | bug ...
    updated_on    TIMESTAMPTZ,
    title         VARCHAR,
    kind          VARCHAR,              -- issue type (Bug, Story, ...) when the export has one
    project       VARCHAR,              -- KAFKA, pallets/flask, ...
    created_at    TIMESTAMPTZ,
    completed_at  TIMESTAMPTZ,
    status        VARCHAR,
    resolution    VARCHAR,
    priority      VARCHAR,
    labels        VARCHAR[],
    fingerprint   VARCHAR NOT NULL,     -- sha1 of the normalised record: re-loads compare it
    raw           JSON NOT NULL,
    load_id       BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS task_events (
    task_ref  VARCHAR NOT NULL,
    "at"      TIMESTAMPTZ NOT NULL,  -- quoted: a reserved word in DuckDB
    kind      VARCHAR NOT NULL,  -- created | closed | reopened | labeled | status_changed | cross-referenced ...
    detail    VARCHAR NOT NULL DEFAULT '',  -- '' when the event has none (part of the key)
    actor     VARCHAR,
    load_id   BIGINT NOT NULL,
    -- where the event came from: 'record' = the task's own record (replaced with it);
    -- 'events' / 'timeline' = a GitHub issue-events / timeline response loaded beside it
    via       VARCHAR DEFAULT 'record',
    PRIMARY KEY (task_ref, "at", kind, detail)
);
-- Databases created before the column existed (ALTER cannot add NOT NULL in DuckDB).
ALTER TABLE task_events ADD COLUMN IF NOT EXISTS via VARCHAR DEFAULT 'record';

CREATE TABLE IF NOT EXISTS task_links (
    task_ref   VARCHAR NOT NULL,
    target_ref VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,  -- link type name, e.g. Regression, Blocker, Duplicate
    direction  VARCHAR NOT NULL,  -- inward | outward
    phrase     VARCHAR,           -- the directional wording when known, e.g. "is caused by"
    load_id    BIGINT NOT NULL,
    via        VARCHAR DEFAULT 'record',  -- as task_events.via
    PRIMARY KEY (task_ref, target_ref, kind, direction)
);
ALTER TABLE task_links ADD COLUMN IF NOT EXISTS via VARCHAR DEFAULT 'record';

-- Which commits mention which task (built by agent_reflection.load.task_matcher).
CREATE TABLE IF NOT EXISTS task_commits (
    task_ref   VARCHAR NOT NULL,
    repo       VARCHAR NOT NULL,
    sha        VARCHAR NOT NULL,
    -- the matcher rule (task-ref | jira-key | github-ref), or github-event: a commit id the
    -- board record itself names (a referenced / merged / closed event, a PR's merge commit)
    matched_by VARCHAR NOT NULL,
    load_id    BIGINT NOT NULL,
    PRIMARY KEY (task_ref, repo, sha)
);

-- Which board task each sidecar names (same matcher, applied to reflections.task_ref).
CREATE TABLE IF NOT EXISTS reflection_tasks (
    content_hash VARCHAR NOT NULL,  -- reflections.content_hash
    task_ref     VARCHAR NOT NULL,  -- tasks.task_ref (project known)
    matched_by   VARCHAR NOT NULL,  -- exact | task-ref | jira-key | github-ref
    load_id      BIGINT NOT NULL,
    PRIMARY KEY (content_hash, task_ref)
);
