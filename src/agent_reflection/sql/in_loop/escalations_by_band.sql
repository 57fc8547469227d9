-- Escalation blocks by attempt band and suspected failure layer.
SELECT coalesce(attempt_band, 'no attempt') AS attempt_band,
       coalesce(layer, 'none named') AS failure_layer,
       count(*) AS blocks,
       count(*) FILTER (WHERE valid_trigger) AS valid_triggers,
       count(*) FILTER (WHERE valid_terminal) AS valid_terminal_payloads
FROM (SELECT e.*, unnest(CASE WHEN len(failure_layers) = 0 THEN [NULL]
                              ELSE failure_layers END) AS layer
      FROM escalations e)
GROUP BY ALL
ORDER BY attempt_band, failure_layer;
