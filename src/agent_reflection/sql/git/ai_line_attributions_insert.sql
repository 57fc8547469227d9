-- The AI line ranges of the notes read by one load of $repo: one list per column.
INSERT INTO ai_line_attributions
    (repo, sha, path, start_line, end_line, agent, tool, model, session_id, kind, source,
     load_id)
SELECT $repo, unnest($shas::VARCHAR[]), unnest($paths::VARCHAR[]),
       unnest($start_lines::INTEGER[]), unnest($end_lines::INTEGER[]),
       unnest($agents::VARCHAR[]), unnest($tools::VARCHAR[]), unnest($models::VARCHAR[]),
       unnest($session_ids::VARCHAR[]), unnest($kinds::VARCHAR[]), $source, $load_id
