-- The lines of these sessions already loaded (a file loaded again, or grown, adds only new lines).
SELECT session_id, record_key FROM messages WHERE session_id IN (SELECT unnest($session_ids::VARCHAR[]))
