-- Re-keying by origin: copy the old-keyed rows of {{old_table}} into the new {{table}}, then
-- drop {{old_table}}.
INSERT INTO {{table}} BY NAME SELECT * FROM {{old_table}};
DROP TABLE {{old_table}}
