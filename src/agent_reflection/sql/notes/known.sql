-- (annotated commit, note blob) of every note of $repo already read.
SELECT sha, note_blob FROM git_notes WHERE repo = $repo
