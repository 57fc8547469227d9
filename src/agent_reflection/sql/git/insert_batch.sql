-- One batch of a git load: Arrow tables `commits_batch` and `commit_files_batch` registered
-- on the connection, appended by column name.
INSERT INTO commits BY NAME SELECT * FROM commits_batch;
INSERT INTO commit_files BY NAME SELECT * FROM commit_files_batch;
