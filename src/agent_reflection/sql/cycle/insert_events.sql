-- Several cycle events in one statement. $event_ids, $types and $data are each one text of
-- items joined by the record separator U+001E: a Python list would cost 15 us an item to bind
-- (DuckDB's client checks each item for a pandas type), and splitting is a third of the cost
-- of parsing a JSON list. No item can hold the separator: ids are digits, types are names and
-- every data text is JSON written with non-ASCII and control characters escaped.
INSERT INTO events (event_id, cycle_run_id, type, "at", data)
SELECT unnest(string_split($event_ids, chr(30)))::BIGINT, $cycle_run_id,
       unnest(string_split($types, chr(30))), $at,
       unnest(string_split($data, chr(30)))::JSON
