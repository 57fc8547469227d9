-- AI attribution notes of other tools (agent_reflection.load.git.ai_notes; docs/git.md "AI
-- attribution notes"): git-ai's authorship logs under refs/notes/ai (Git AI Standard v3.0.0)
-- and whogitit's notes under refs/notes/whogitit.

-- Where commits.agent came from: identity | trailer | subject (a row of the pattern table,
-- docs/git.md "Agent marks") or git-ai-note | whogitit-note (a note beats a pattern); NULL
-- when agent is NULL. Set by every `reflect load git`.
ALTER TABLE commits ADD COLUMN IF NOT EXISTS agent_source VARCHAR;

-- One row per note read, valid or not: a re-load reads only notes whose blob changed.
CREATE TABLE IF NOT EXISTS ai_notes (
    repo       VARCHAR NOT NULL,     -- commits.repo
    ref        VARCHAR NOT NULL,     -- refs/notes/ai | refs/notes/whogitit
    sha        VARCHAR NOT NULL,     -- the annotated commit
    note_blob  VARCHAR NOT NULL,     -- the note's blob id (a changed note is a new blob)
    source     VARCHAR NOT NULL,     -- git-ai-note | whogitit-note
    status     VARCHAR NOT NULL,     -- ok | rejected (the reason is in `rejected`)
    agent      VARCHAR,              -- the agent with most attributed lines; NULL: no AI line
    tool       VARCHAR,              -- that agent's tool as the note names it
    model      VARCHAR,              -- that agent's model as the note names it
    ai_lines   INTEGER NOT NULL,     -- lines the note attributes to an AI session (any agent)
    load_id    BIGINT NOT NULL,
    PRIMARY KEY (repo, ref, sha)
);

-- Line ranges of a commit's files that a note attributes to an AI session, as numbered in
-- that commit's version of the file (1-based, inclusive).
CREATE TABLE IF NOT EXISTS ai_line_attributions (
    repo        VARCHAR NOT NULL,
    sha         VARCHAR NOT NULL,
    path        VARCHAR NOT NULL,
    start_line  INTEGER NOT NULL,
    end_line    INTEGER NOT NULL,
    agent       VARCHAR NOT NULL,     -- commits.agent's names where they coincide, else the tool
    tool        VARCHAR NOT NULL,     -- agent_id.tool (git-ai); claude-code (whogitit)
    model       VARCHAR,
    session_id  VARCHAR,              -- the tool's conversation id (Claude Code: its session_id)
    kind        VARCHAR NOT NULL,     -- ai | ai-modified (whogitit: an AI line a human edited)
    source      VARCHAR NOT NULL,     -- git-ai-note | whogitit-note
    load_id     BIGINT NOT NULL
);
