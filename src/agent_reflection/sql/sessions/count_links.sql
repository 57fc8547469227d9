-- $repo's session links per kind.
SELECT link, count(*) FROM session_commits WHERE repo = $repo GROUP BY link ORDER BY link
