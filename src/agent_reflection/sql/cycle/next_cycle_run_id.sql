-- A fresh id for a cycle pass (findings and events refer to it).
SELECT nextval('cycle_run_seq')
