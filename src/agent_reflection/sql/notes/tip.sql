-- The notes ref's commit recorded by the last notes load of $repo ($ref).
SELECT sha FROM git_notes_tips WHERE repo = $repo AND ref = $ref
