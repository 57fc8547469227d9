-- `reflect p2 sheet`: where `reflect load git` read a repository (its loads, latest first): the
-- path as given (`origin`) and, for a bundle, the clone it was read through (`bundle_clone`).
SELECT load_id, origin, json_extract_string(detail, '$.bundle_clone') AS bundle_clone
FROM loads
WHERE source = 'git' AND json_extract_string(detail, '$.repo') = $repo
ORDER BY load_id DESC
