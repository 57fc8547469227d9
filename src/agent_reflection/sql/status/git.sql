-- `reflect status`, P2: commits, repositories, and repositories with SZZ attributions.
SELECT (SELECT count(*) FROM commits) AS commits,
    (SELECT count(DISTINCT repo) FROM commits) AS repos,
    (SELECT count(DISTINCT repo) FROM fix_inducing) AS szz_repos
