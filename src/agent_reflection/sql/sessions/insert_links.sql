-- Every session's commits in $repo, each with its strongest link (docs/loading.md):
--   during-session: the commit is in a sidecar's git.commits (the Stop hook's start..stop list);
--   note:           a note under refs/notes/reflection on the commit names the session;
--   file-overlap:   only for sessions none of whose sidecars carries git facts and that no note
--                   names: a non-merge commit of $repo (matched by reflections.repo) committed
--                   between $hours_before hours before and $hours_after hours after a sidecar's
--                   timestamp, whose files' Jaccard similarity with the sidecar's files_changed
--                   is at least $min_jaccard (that similarity is the link's confidence).
-- session_id 'unknown' (a Stop payload without one) names no session: never linked.
INSERT INTO session_commits (session_id, repo, sha, link, confidence, load_id)
WITH during AS (
    SELECT DISTINCT r.session_id, c.repo, c.sha, 'during-session' AS link, 1.0 AS confidence,
           1 AS strength
    FROM reflections r,
         unnest(CAST(json_extract(r.raw, '$.git.commits') AS VARCHAR[])) AS g(sha)
    JOIN commits c ON c.repo = $repo AND c.sha = g.sha
    WHERE r.session_id <> 'unknown'
),
latest_notes AS (
    SELECT * FROM git_notes WHERE repo = $repo
    QUALIFY row_number() OVER (PARTITION BY repo, sha ORDER BY load_id DESC) = 1
),
noted AS (
    SELECT DISTINCT s.session_id, n.repo, n.sha, 'note' AS link, 1.0 AS confidence,
           2 AS strength
    FROM latest_notes n, unnest(n.session_ids) AS s(session_id)
    JOIN commits c ON c.repo = n.repo AND c.sha = n.sha
    WHERE s.session_id <> 'unknown'
),
exact_sessions AS (
    SELECT session_id FROM reflections
    WHERE coalesce(json_type(raw, '$.git'), 'NULL') = 'OBJECT'
    UNION SELECT session_id FROM noted
),
fallback_sidecars AS (
    SELECT r.session_id, r."timestamp", list_distinct(r.files_changed) AS files
    FROM reflections r
    WHERE r.repo = $repo AND len(r.files_changed) > 0 AND r.session_id <> 'unknown'
      AND r.session_id NOT IN (SELECT session_id FROM exact_sessions)
),
commit_file_sets AS (
    SELECT c.sha, c.committer_time, list_distinct(list(f.path)) AS files
    FROM commits c JOIN commit_files f ON f.repo = c.repo AND f.sha = c.sha
    WHERE c.repo = $repo AND NOT c.is_merge
    GROUP BY c.sha, c.committer_time
),
overlap AS (
    SELECT s.session_id, $repo AS repo, k.sha, 'file-overlap' AS link,
           max(len(list_intersect(s.files, k.files))
               / len(list_distinct(list_concat(s.files, k.files)))) AS confidence,
           3 AS strength
    FROM fallback_sidecars s
    JOIN commit_file_sets k
      ON k.committer_time >= s."timestamp" - to_hours(CAST($hours_before AS BIGINT))
     AND k.committer_time <= s."timestamp" + to_hours(CAST($hours_after AS BIGINT))
    GROUP BY s.session_id, k.sha
    HAVING max(len(list_intersect(s.files, k.files))
               / len(list_distinct(list_concat(s.files, k.files)))) >= $min_jaccard
),
every_link AS (
    SELECT * FROM during UNION ALL SELECT * FROM noted UNION ALL SELECT * FROM overlap
)
SELECT session_id, repo, sha, link, confidence, $load_id
FROM every_link
QUALIFY row_number() OVER (PARTITION BY session_id, repo, sha ORDER BY strength) = 1
