-- Simulated commits (simulate/phase0.commit_row), one parameter per column. The signal columns
-- come from load/git/signals.derive_signals and load/git/agents.commit_agent, as the git loader
-- writes them.
INSERT INTO commits (
    repo, sha, parents, author_name, author_email, author_time, author_tz_offset,
    committer_name, committer_email, committer_time, committer_tz_offset, subject, body,
    is_merge, signals_version, is_revert, reverts_sha, is_reapply, pr_number, cc_type,
    cc_scope, cc_breaking, is_fix_like, files_available, load_id, agent, agent_version,
    agent_source
)
VALUES (
    $repo, $sha, $parents, $author_name, $author_email, $author_time, $author_tz_offset,
    $committer_name, $committer_email, $committer_time, $committer_tz_offset, $subject, $body,
    $is_merge, $signals_version, $is_revert, $reverts_sha, $is_reapply, $pr_number, $cc_type,
    $cc_scope, $cc_breaking, $is_fix_like, $files_available, $load_id, $agent, $agent_version,
    $agent_source
)
