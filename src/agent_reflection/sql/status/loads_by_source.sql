-- `reflect status`: the `loads` bookkeeping per source: loads by status, rows loaded and
-- rejected, and the newest load (when it finished, what it read).
SELECT source,
    count(*) AS loads,
    count(*) FILTER (WHERE status = 'ok') AS ok,
    count(*) FILTER (WHERE status <> 'ok') AS not_ok,
    coalesce(sum(rows_loaded), 0) AS rows_loaded,
    coalesce(sum(rows_rejected), 0) AS rows_rejected,
    max(finished_at) AS last_finished,
    arg_max(origin, started_at) AS last_origin,
    arg_max(status, started_at) AS last_status
FROM loads
GROUP BY source
ORDER BY source
