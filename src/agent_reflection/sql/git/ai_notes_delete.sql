-- Forget the notes of $repo under $ref on the listed commits (changed or removed notes; the
-- changed ones are inserted again).
DELETE FROM ai_notes WHERE repo = $repo AND ref = $ref AND list_contains($shas, sha)
