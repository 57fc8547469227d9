-- Agent vs human: whether a finished SZZ attribution load (`reflect load git --szz`) ran for one
-- repo (its `loads` row names the repo in detail.repo).
SELECT count(*) > 0
FROM loads
WHERE source = 'git-szz' AND status = 'ok' AND json_extract_string(detail, '$.repo') = $repo
