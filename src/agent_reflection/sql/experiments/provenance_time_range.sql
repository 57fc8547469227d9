-- Earliest and latest instant over the listed time columns ($columns) of one table ($table).
SELECT min(least(*COLUMNS(c -> list_contains($columns, c)))) AS time_min,
       max(greatest(*COLUMNS(c -> list_contains($columns, c)))) AS time_max
FROM query_table($table)
