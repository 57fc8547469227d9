-- Tips the repository no longer has (force-pushed away and garbage-collected): git cannot
-- exclude an object it does not know, so they are dropped.
DELETE FROM git_tips WHERE repo = $repo AND list_contains($shas::VARCHAR[], sha)
