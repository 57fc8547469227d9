-- $n fresh ids for cycle events, in increasing order.
SELECT list(id ORDER BY id) FROM (SELECT nextval('cycle_event_seq') AS id FROM range($n))
