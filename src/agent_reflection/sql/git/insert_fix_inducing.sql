-- One batch of SZZ's fix_inducing rows (szz._insert), read like insert_fix_changes.sql's.
INSERT INTO fix_inducing BY NAME
SELECT
    $repo::VARCHAR AS repo,
    unnest(b.fix_sha) AS fix_sha,
    unnest(b.introducing_sha) AS introducing_sha,
    unnest(b.path) AS path,
    unnest(b.lines) AS lines,
    unnest(b.method) AS method,
    unnest(b.gap_days) AS gap_days,
    unnest(b.introducing_is_merge) AS introducing_is_merge,
    unnest(b.introducing_is_bulk) AS introducing_is_bulk,
    $szz_version::INTEGER AS szz_version,
    $load_id::BIGINT AS load_id
FROM (
    SELECT from_json($batch, '{
        "fix_sha": ["VARCHAR"], "introducing_sha": ["VARCHAR"], "path": ["VARCHAR"],
        "lines": ["INTEGER"], "method": ["VARCHAR"], "gap_days": ["DOUBLE"],
        "introducing_is_merge": ["BOOLEAN"], "introducing_is_bulk": ["BOOLEAN"]
    }') AS b
)
