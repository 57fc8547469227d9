-- Git notes under refs/notes/reflection (agent_reflection.load.git.notes): each note holds
-- {"notes_version": 1, "sidecars": [reflection.v1, ...]}; its sidecars load into `reflections`
-- like sidecar files. One row per note read, so a re-load reads only notes it has not seen.
CREATE TABLE IF NOT EXISTS git_notes (
    repo        VARCHAR NOT NULL,     -- commits.repo
    sha         VARCHAR NOT NULL,     -- the annotated commit
    note_blob   VARCHAR NOT NULL,     -- the note's blob id (a changed note is a new blob)
    session_ids VARCHAR[] NOT NULL,   -- session_id of every valid sidecar in the note
    sidecars    INTEGER NOT NULL,     -- sidecars in the note (valid or not)
    load_id     BIGINT NOT NULL,
    PRIMARY KEY (repo, sha, note_blob)
);

-- The notes ref's commit at the last load of a repo: an unchanged tip means nothing to read.
CREATE TABLE IF NOT EXISTS git_notes_tips (
    repo    VARCHAR NOT NULL,
    ref     VARCHAR NOT NULL,   -- refs/notes/reflection
    sha     VARCHAR NOT NULL,
    load_id BIGINT NOT NULL,
    PRIMARY KEY (repo, ref)
);
