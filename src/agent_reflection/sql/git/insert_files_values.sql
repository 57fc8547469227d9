-- The file rows of a small batch, one list per column (see insert_commits_values.sql).
INSERT INTO commit_files BY NAME
SELECT
    unnest($repo::VARCHAR[]) AS repo,
    unnest($sha::VARCHAR[]) AS sha,
    unnest($path::VARCHAR[]) AS path,
    unnest($old_path::VARCHAR[]) AS old_path,
    unnest($added::INTEGER[]) AS added,
    unnest($deleted::INTEGER[]) AS deleted,
    unnest($binary::BOOLEAN[]) AS binary,
    unnest($load_id::BIGINT[]) AS load_id
