-- Drop $repo's session outcomes before they are derived again.
DELETE FROM session_outcomes WHERE repo = $repo
