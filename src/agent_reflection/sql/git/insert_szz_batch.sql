-- One batch of SZZ results: Arrow tables `fix_changes_batch` and `fix_inducing_batch`
-- registered on the connection, appended by column name in one transaction.
INSERT INTO fix_changes BY NAME SELECT * FROM fix_changes_batch;
INSERT INTO fix_inducing BY NAME SELECT * FROM fix_inducing_batch;
