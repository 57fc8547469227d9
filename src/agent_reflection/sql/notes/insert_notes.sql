-- The notes read by one load of $repo: per note (same position in each list) the commit it
-- annotates, its blob, the sessions its valid sidecars name and how many sidecars it holds.
INSERT INTO git_notes (repo, sha, note_blob, session_ids, sidecars, load_id)
SELECT $repo, unnest($shas), unnest($note_blobs), unnest($session_ids),
       unnest($sidecars), $load_id
ON CONFLICT DO NOTHING
