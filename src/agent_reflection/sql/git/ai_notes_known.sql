-- (annotated commit, note blob) of every note of $repo under $ref already read.
SELECT sha, note_blob FROM ai_notes WHERE repo = $repo AND ref = $ref
