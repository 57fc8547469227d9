-- On the platform's SQLite file: take its write lock before reading any status, so nothing can
-- change a task between our check and our pause (a plain BEGIN would lock only at the UPDATE).
BEGIN IMMEDIATE
