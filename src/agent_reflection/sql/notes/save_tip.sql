-- Record the notes ref's commit after a complete notes load of $repo.
INSERT OR REPLACE INTO git_notes_tips (repo, ref, sha, load_id) VALUES ($repo, $ref, $sha, $load_id)
