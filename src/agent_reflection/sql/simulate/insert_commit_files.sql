-- Files of simulated commits: one modified text file per row (1 line added, none deleted).
INSERT INTO commit_files (repo, sha, path, old_path, added, deleted, "binary", load_id)
VALUES ($repo, $sha, $path, NULL, 1, 0, false, $load_id)
