-- Record the tips a complete load started from (every ancestor of each is now in `commits`).
INSERT INTO git_tips (repo, sha, load_id)
SELECT $repo, tip, $load_id
FROM (SELECT unnest($shas::VARCHAR[]) AS tip)
ON CONFLICT DO NOTHING
