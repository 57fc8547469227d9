-- Replace the stored runs whose copy changed (a run that finished since), add the new ones;
-- $1 = load_id. Unchanged runs are left as they are.
DELETE FROM ci_runs AS c
USING ci_incoming AS i
WHERE c.repo = i.repo AND c.sha = i.sha AND c.kind = i.kind AND c.name = i.name
  AND c.run_id = i.run_id AND c.attempt = i.attempt AND c.fingerprint <> i.fingerprint;
INSERT INTO ci_runs (repo, sha, kind, name, run_id, attempt, status, conclusion, started,
                     finished, url, branch, event, fingerprint, raw, source_file, load_id)
SELECT i.repo, i.sha, i.kind, i.name, i.run_id, i.attempt, i.status, i.conclusion, i.started,
       i.finished, i.url, i.branch, i.event, i.fingerprint, i.raw::JSON, i.source_file, $1
FROM ci_incoming AS i
ON CONFLICT DO NOTHING;
