-- Re-keying by origin: move the old-keyed table {{table}} aside as {{old_table}}; the schema
-- then creates {{table}} anew with the origin key.
ALTER TABLE {{table}} RENAME TO {{old_table}}
