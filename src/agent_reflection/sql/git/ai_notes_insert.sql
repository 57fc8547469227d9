-- The notes read by one load of $repo under $ref: one list per column, zipped by unnest().
INSERT INTO ai_notes
    (repo, ref, sha, note_blob, source, status, agent, tool, model, ai_lines, load_id)
SELECT $repo, $ref, unnest($shas::VARCHAR[]), unnest($note_blobs::VARCHAR[]), $source,
       unnest($statuses::VARCHAR[]), unnest($agents::VARCHAR[]), unnest($tools::VARCHAR[]),
       unnest($models::VARCHAR[]), unnest($ai_lines::INTEGER[]), $load_id
