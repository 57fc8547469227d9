-- Whether sessions of $repo need deriving: any sidecar stored, or old rows of $repo to clear.
SELECT EXISTS (SELECT 1 FROM reflections)
    OR EXISTS (SELECT 1 FROM session_commits WHERE repo = $repo)
    OR EXISTS (SELECT 1 FROM session_outcomes WHERE repo = $repo)
