-- Files of the given commits: (repo, sha) pairs in $repos / $shas (same length, zipped).
SELECT cf.repo, cf.sha, cf.path
FROM commit_files cf
JOIN (SELECT unnest($repos) AS repo, unnest($shas) AS sha) w USING (repo, sha)
ORDER BY cf.repo, cf.sha, cf.path
