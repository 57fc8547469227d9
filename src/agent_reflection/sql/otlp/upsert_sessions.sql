-- otel_sessions from the batch's new records: a new session gets a row, a known one its times
-- widened and its counts added to (new records only, so a retried export counts once).
INSERT INTO otel_sessions BY NAME
SELECT r.session_id, r.first_ts, r.last_ts, r.service_name, r.app_version, r.user_id,
       r.user_email, r.organization_id, r.terminal_type, r.n_events, r.n_prompts,
       r.n_tool_results, coalesce(t.failures, 0) AS n_tool_failures, r.n_api_requests,
       r.n_api_errors, coalesce(a.cost_usd, 0) AS cost_usd,
       coalesce(a.input_tokens, 0) AS input_tokens, coalesce(a.output_tokens, 0) AS output_tokens
FROM (
    SELECT b.session_id, min(b.ts) AS first_ts, max(b.ts) AS last_ts,
           max(b.service_name) AS service_name,
           max(coalesce(b.a[1], b.r[1])) AS app_version,
           max(coalesce(b.a[2], b.r[2])) AS user_id,
           max(coalesce(b.a[3], b.r[3])) AS user_email,
           max(coalesce(b.a[4], b.r[4])) AS organization_id,
           max(coalesce(b.a[5], b.r[5])) AS terminal_type,
           count(*) FILTER (WHERE b.signal = 'log') AS n_events,
           count(*) FILTER (WHERE b.name = 'claude_code.user_prompt') AS n_prompts,
           count(*) FILTER (WHERE b.name = 'claude_code.tool_result') AS n_tool_results,
           count(*) FILTER (WHERE b.name = 'claude_code.api_request') AS n_api_requests,
           count(*) FILTER (WHERE b.name = 'claude_code.api_error') AS n_api_errors
    -- each record's attributes and resource parsed once for the five values (a path list)
    FROM (
        SELECT b.session_id, b.ts, b.service_name, b.signal, b.name,
               json_extract_string(b.attributes, ['$."app.version"', '$."user.id"',
                   '$."user.email"', '$."organization.id"', '$."terminal.type"']) AS a,
               json_extract_string(b.resource, ['$."app.version"', '$."user.id"',
                   '$."user.email"', '$."organization.id"', '$."terminal.type"']) AS r
        FROM otlp_batch_records b
        SEMI JOIN otlp_new n ON n.record_key = b.record_key
        WHERE b.session_id IS NOT NULL
    ) b
    GROUP BY b.session_id
) r
LEFT JOIN (
    SELECT b.session_id, count(*) FILTER (WHERE b.success = FALSE) AS failures
    FROM otlp_batch_tool_results b
    SEMI JOIN otlp_new n ON n.record_key = b.record_key
    GROUP BY b.session_id
) t ON t.session_id = r.session_id
LEFT JOIN (
    SELECT b.session_id, sum(b.cost_usd) AS cost_usd, sum(b.input_tokens) AS input_tokens,
           sum(b.output_tokens) AS output_tokens
    FROM otlp_batch_api_requests b
    SEMI JOIN otlp_new n ON n.record_key = b.record_key
    GROUP BY b.session_id
) a ON a.session_id = r.session_id
ON CONFLICT (session_id) DO UPDATE SET
    first_ts = least(otel_sessions.first_ts, excluded.first_ts),
    last_ts = greatest(otel_sessions.last_ts, excluded.last_ts),
    service_name = coalesce(excluded.service_name, otel_sessions.service_name),
    app_version = coalesce(excluded.app_version, otel_sessions.app_version),
    user_id = coalesce(excluded.user_id, otel_sessions.user_id),
    user_email = coalesce(excluded.user_email, otel_sessions.user_email),
    organization_id = coalesce(excluded.organization_id, otel_sessions.organization_id),
    terminal_type = coalesce(excluded.terminal_type, otel_sessions.terminal_type),
    n_events = otel_sessions.n_events + excluded.n_events,
    n_prompts = otel_sessions.n_prompts + excluded.n_prompts,
    n_tool_results = otel_sessions.n_tool_results + excluded.n_tool_results,
    n_tool_failures = otel_sessions.n_tool_failures + excluded.n_tool_failures,
    n_api_requests = otel_sessions.n_api_requests + excluded.n_api_requests,
    n_api_errors = otel_sessions.n_api_errors + excluded.n_api_errors,
    cost_usd = otel_sessions.cost_usd + excluded.cost_usd,
    input_tokens = otel_sessions.input_tokens + excluded.input_tokens,
    output_tokens = otel_sessions.output_tokens + excluded.output_tokens
