-- Forget the line attributions that notes of one tool ($source) gave the listed commits of
-- $repo (their note changed or went away).
DELETE FROM ai_line_attributions
WHERE repo = $repo AND source = $source AND list_contains($shas, sha)
