-- A fresh id for a cycle event.
SELECT nextval('cycle_event_seq')
