-- A small batch of a git load passed as one list per column (no Arrow: importing pyarrow costs
-- more than the whole insert for a few commits). unnest() of equal-length lists zips them.
INSERT INTO commits BY NAME
SELECT
    unnest($repo::VARCHAR[]) AS repo,
    unnest($sha::VARCHAR[]) AS sha,
    unnest($parents::VARCHAR[][]) AS parents,
    unnest($author_name::VARCHAR[]) AS author_name,
    unnest($author_email::VARCHAR[]) AS author_email,
    to_timestamp(unnest($author_time::BIGINT[])) AS author_time,
    unnest($author_tz_offset::INTEGER[]) AS author_tz_offset,
    unnest($committer_name::VARCHAR[]) AS committer_name,
    unnest($committer_email::VARCHAR[]) AS committer_email,
    to_timestamp(unnest($committer_time::BIGINT[])) AS committer_time,
    unnest($committer_tz_offset::INTEGER[]) AS committer_tz_offset,
    unnest($subject::VARCHAR[]) AS subject,
    unnest($body::VARCHAR[]) AS body,
    unnest($is_merge::BOOLEAN[]) AS is_merge,
    unnest($signals_version::INTEGER[]) AS signals_version,
    unnest($is_revert::BOOLEAN[]) AS is_revert,
    unnest($reverts_sha::VARCHAR[]) AS reverts_sha,
    unnest($is_reapply::BOOLEAN[]) AS is_reapply,
    unnest($pr_number::INTEGER[]) AS pr_number,
    unnest($cc_type::VARCHAR[]) AS cc_type,
    unnest($cc_scope::VARCHAR[]) AS cc_scope,
    unnest($cc_breaking::BOOLEAN[]) AS cc_breaking,
    unnest($is_fix_like::BOOLEAN[]) AS is_fix_like,
    unnest($files_available::BOOLEAN[]) AS files_available,
    unnest($load_id::BIGINT[]) AS load_id
