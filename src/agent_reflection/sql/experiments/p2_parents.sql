-- P2: each commit's parents (a fix whose parent failed CI is "CI caught it").
SELECT lower(sha) AS sha, parents FROM commits
