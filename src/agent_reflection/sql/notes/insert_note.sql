-- One note read: the commit it annotates, its blob and the sessions its valid sidecars name.
INSERT INTO git_notes (repo, sha, note_blob, session_ids, sidecars, load_id)
VALUES ($repo, $sha, $note_blob, $session_ids, $sidecars, $load_id)
ON CONFLICT DO NOTHING
