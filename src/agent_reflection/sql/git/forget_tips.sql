-- Drop tips: ones the repository no longer has (force-pushed away and garbage-collected: git
-- cannot exclude an object it does not know), and ones a newer recorded tip reaches.
DELETE FROM git_tips WHERE repo = $repo AND list_contains($shas::VARCHAR[], sha)
