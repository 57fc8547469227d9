-- Drop $repo's session links before they are derived again (they are recomputed on every load).
DELETE FROM session_commits WHERE repo = $repo
