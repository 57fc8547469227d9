-- A new random redaction key (see schema/71_redaction.sql).
INSERT INTO redaction_key (key) VALUES ($key)
