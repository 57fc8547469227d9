-- Re-keying by origin: the origins stored in the old-keyed table {{old_table}}.
SELECT DISTINCT origin FROM {{old_table}}
