-- Rejected records, newest load first. $load_id / $source: NULL means any.
SELECT load_id, source, location, reason, raw, rejected_at
FROM rejected
WHERE ($load_id IS NULL OR load_id = $load_id) AND ($source IS NULL OR source = $source)
ORDER BY load_id DESC, rejected_at, location
LIMIT $limit
