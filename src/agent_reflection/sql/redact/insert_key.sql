-- A new random redaction key (see schema/70_redaction.sql).
INSERT INTO redaction_key (key) VALUES ($key)
