-- The file rows of one batch of a git load: one JSON document of column lists, read like
-- insert_commits.sql's.
INSERT INTO commit_files BY NAME
SELECT
    $repo::VARCHAR AS repo,
    unnest(b.sha) AS sha,
    unnest(b.path) AS path,
    unnest(b.old_path) AS old_path,
    unnest(b.added) AS added,
    unnest(b.deleted) AS deleted,
    unnest(b."binary") AS "binary",
    $load_id::BIGINT AS load_id
FROM (
    SELECT from_json($batch, '{
        "sha": ["VARCHAR"], "path": ["VARCHAR"], "old_path": ["VARCHAR"],
        "added": ["INTEGER"], "deleted": ["INTEGER"], "binary": ["BOOLEAN"]
    }') AS b
)
