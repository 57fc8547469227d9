-- Agent vs human: the paths the listed commits of one repo changed (non-binary), to blame.
SELECT DISTINCT path FROM commit_files
WHERE repo = $repo AND sha IN (SELECT unnest($shas::VARCHAR[])) AND NOT "binary"
ORDER BY path
