-- The tables of a platform SQLite file (which of tasks, sub_session_outcomes, interaction_log).
SELECT name FROM sqlite_master WHERE type = 'table'
