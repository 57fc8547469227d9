-- P2: SZZ candidates per fix: blamed code lines per introducing commit over all paths.
SELECT repo, fix_sha, introducing_sha, sum(lines)::BIGINT AS lines,
       bool_or(introducing_is_merge) AS is_merge, bool_or(introducing_is_bulk) AS is_bulk
FROM fix_inducing
WHERE introducing_sha IS NOT NULL AND lines > 0
GROUP BY repo, fix_sha, introducing_sha
ORDER BY repo, fix_sha, introducing_sha
