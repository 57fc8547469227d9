-- One batch of a git load's commits (history._insert). $batch is one JSON document of column
-- lists, {"sha": [...], "parents": [[...], ...], ...}: from_json reads it in one call (binding a
-- Python list costs a conversion per value; Arrow costs pyarrow's import), and unnest() of the
-- equal-length lists zips them into rows. The columns every row shares are bound once.
INSERT INTO commits BY NAME
SELECT
    $repo::VARCHAR AS repo,
    unnest(b.sha) AS sha,
    unnest(b.parents) AS parents,
    unnest(b.author_name) AS author_name,
    unnest(b.author_email) AS author_email,
    to_timestamp(unnest(b.author_time)) AS author_time,
    unnest(b.author_tz_offset) AS author_tz_offset,
    unnest(b.committer_name) AS committer_name,
    unnest(b.committer_email) AS committer_email,
    to_timestamp(unnest(b.committer_time)) AS committer_time,
    unnest(b.committer_tz_offset) AS committer_tz_offset,
    unnest(b.subject) AS subject,
    unnest(b.body) AS body,
    unnest(b.is_merge) AS is_merge,
    $signals_version::INTEGER AS signals_version,
    unnest(b.is_revert) AS is_revert,
    unnest(b.reverts_sha) AS reverts_sha,
    unnest(b.is_reapply) AS is_reapply,
    unnest(b.pr_number) AS pr_number,
    unnest(b.cc_type) AS cc_type,
    unnest(b.cc_scope) AS cc_scope,
    unnest(b.cc_breaking) AS cc_breaking,
    unnest(b.is_fix_like) AS is_fix_like,
    unnest(b.files_available) AS files_available,
    $load_id::BIGINT AS load_id,
    unnest(b.agent) AS agent,
    $agent_version::INTEGER AS agent_version
FROM (
    SELECT from_json($batch, '{
        "sha": ["VARCHAR"], "parents": [["VARCHAR"]],
        "author_name": ["VARCHAR"], "author_email": ["VARCHAR"],
        "author_time": ["BIGINT"], "author_tz_offset": ["INTEGER"],
        "committer_name": ["VARCHAR"], "committer_email": ["VARCHAR"],
        "committer_time": ["BIGINT"], "committer_tz_offset": ["INTEGER"],
        "subject": ["VARCHAR"], "body": ["VARCHAR"], "is_merge": ["BOOLEAN"],
        "is_revert": ["BOOLEAN"], "reverts_sha": ["VARCHAR"], "is_reapply": ["BOOLEAN"],
        "pr_number": ["INTEGER"], "cc_type": ["VARCHAR"], "cc_scope": ["VARCHAR"],
        "cc_breaking": ["BOOLEAN"], "is_fix_like": ["BOOLEAN"], "files_available": ["BOOLEAN"],
        "agent": ["VARCHAR"]
    }') AS b
)
