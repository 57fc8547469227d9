-- One batch of SZZ's fix_changes rows (szz._insert): $batch is one JSON document of column
-- lists, read like insert_commits.sql's; the columns every row shares are bound once.
INSERT INTO fix_changes BY NAME
SELECT
    $repo::VARCHAR AS repo,
    unnest(b.fix_sha) AS fix_sha,
    unnest(b.path) AS path,
    unnest(b.old_path) AS old_path,
    unnest(b.kind) AS kind,
    unnest(b.is_code) AS is_code,
    unnest(b.code_lines_added) AS code_lines_added,
    unnest(b.code_lines_deleted) AS code_lines_deleted,
    unnest(b.cosmetic_lines_added) AS cosmetic_lines_added,
    unnest(b.cosmetic_lines_deleted) AS cosmetic_lines_deleted,
    unnest(b.version_lines) AS version_lines,
    unnest(b.text_lines) AS text_lines,
    $szz_version::INTEGER AS szz_version,
    $load_id::BIGINT AS load_id
FROM (
    SELECT from_json($batch, '{
        "fix_sha": ["VARCHAR"], "path": ["VARCHAR"], "old_path": ["VARCHAR"],
        "kind": ["VARCHAR"], "is_code": ["BOOLEAN"],
        "code_lines_added": ["INTEGER"], "code_lines_deleted": ["INTEGER"],
        "cosmetic_lines_added": ["INTEGER"], "cosmetic_lines_deleted": ["INTEGER"],
        "version_lines": ["INTEGER"], "text_lines": ["INTEGER"]
    }') AS b
)
