-- Live telemetry received by `reflect serve` (OTLP/HTTP logs, metrics and spans; Claude Code's
-- documented events and metrics). Every record is kept raw in `otel_records`, whatever its name;
-- the known Claude Code events and the metric data points also land in typed tables with the
-- documented attribute names. record_key is a hash of the record with its resource and scope:
-- an export the exporter retries (or a spool replayed after a crash) is stored once.

CREATE TABLE IF NOT EXISTS otel_records (
    record_key   VARCHAR PRIMARY KEY,
    signal       VARCHAR NOT NULL,    -- log | metric | span
    name         VARCHAR,             -- event name (claude_code.tool_result, ...), metric or span name
    session_id   VARCHAR,             -- attribute session.id (record, else resource)
    ts           TIMESTAMPTZ,         -- the record's time (observed time, else arrival, when unset)
    service_name VARCHAR,             -- resource attribute service.name (claude-code)
    scope_name   VARCHAR,             -- instrumentation scope (com.anthropic.claude_code.events)
    attributes   JSON NOT NULL,       -- the record's (or data point's) attributes
    resource     JSON NOT NULL,       -- the resource attributes
    body         JSON,                -- log body / metric data point / span fields
    received_at  TIMESTAMPTZ NOT NULL,
    load_id      BIGINT NOT NULL      -- the `loads` row of the server run that stored it
);

CREATE TABLE IF NOT EXISTS otel_sessions (
    session_id      VARCHAR PRIMARY KEY,
    first_ts        TIMESTAMPTZ,
    last_ts         TIMESTAMPTZ,
    service_name    VARCHAR,
    app_version     VARCHAR,          -- app.version
    user_id         VARCHAR,          -- user.id
    user_email      VARCHAR,          -- user.email
    organization_id VARCHAR,          -- organization.id
    terminal_type   VARCHAR,          -- terminal.type
    n_events        BIGINT NOT NULL,  -- log records (events) of the session
    n_prompts       BIGINT NOT NULL,
    n_tool_results  BIGINT NOT NULL,
    n_tool_failures BIGINT NOT NULL,  -- tool results with success = false
    n_api_requests  BIGINT NOT NULL,
    n_api_errors    BIGINT NOT NULL,
    cost_usd        DOUBLE NOT NULL,  -- sum of api_request cost_usd
    input_tokens    BIGINT NOT NULL,
    output_tokens   BIGINT NOT NULL
);

-- claude_code.tool_result: one row per tool execution.
CREATE TABLE IF NOT EXISTS otel_tool_results (
    record_key             VARCHAR PRIMARY KEY,
    session_id             VARCHAR,
    ts                     TIMESTAMPTZ,
    prompt_id              VARCHAR,   -- prompt.id: the user prompt the call served
    event_sequence         BIGINT,    -- event.sequence: order of the event in the session
    tool_name              VARCHAR,
    success                BOOLEAN,
    duration_ms            DOUBLE,
    error                  VARCHAR,   -- the error message when it failed
    decision_type          VARCHAR,   -- accept | reject
    decision_source        VARCHAR,   -- config | user_permanent | user_temporary | user_abort | ...
    tool_parameters        VARCHAR,   -- JSON text (Bash command, skill name, MCP server, ...)
    tool_result_size_bytes BIGINT
);

-- claude_code.api_request: one row per model request.
CREATE TABLE IF NOT EXISTS otel_api_requests (
    record_key            VARCHAR PRIMARY KEY,
    session_id            VARCHAR,
    ts                    TIMESTAMPTZ,
    prompt_id             VARCHAR,
    model                 VARCHAR,
    cost_usd              DOUBLE,
    duration_ms           DOUBLE,
    input_tokens          BIGINT,
    output_tokens         BIGINT,
    cache_read_tokens     BIGINT,
    cache_creation_tokens BIGINT
);

-- claude_code.api_error
CREATE TABLE IF NOT EXISTS otel_api_errors (
    record_key  VARCHAR PRIMARY KEY,
    session_id  VARCHAR,
    ts          TIMESTAMPTZ,
    prompt_id   VARCHAR,
    model       VARCHAR,
    error       VARCHAR,
    status_code VARCHAR,                -- HTTP status, or 'undefined' as Claude Code sends it
    duration_ms DOUBLE,
    attempt     BIGINT
);

-- claude_code.user_prompt (the text only when the user set OTEL_LOG_USER_PROMPTS=1)
CREATE TABLE IF NOT EXISTS otel_prompts (
    record_key    VARCHAR PRIMARY KEY,
    session_id    VARCHAR,
    ts            TIMESTAMPTZ,
    prompt_id     VARCHAR,
    prompt_length BIGINT,
    prompt        VARCHAR
);

-- claude_code.tool_decision: a permission decision (accept / reject) on a tool use.
CREATE TABLE IF NOT EXISTS otel_tool_decisions (
    record_key VARCHAR PRIMARY KEY,
    session_id VARCHAR,
    ts         TIMESTAMPTZ,
    prompt_id  VARCHAR,
    tool_name  VARCHAR,
    decision   VARCHAR,
    source     VARCHAR
);

-- One row per metric data point (claude_code.session.count, claude_code.token.usage,
-- claude_code.cost.usage, claude_code.lines_of_code.count, claude_code.commit.count, ...).
CREATE TABLE IF NOT EXISTS otel_metric_points (
    record_key   VARCHAR PRIMARY KEY,
    name         VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,    -- sum | gauge | histogram | exponential_histogram | summary
    unit         VARCHAR,
    temporality  VARCHAR,             -- delta | cumulative (sums and histograms)
    session_id   VARCHAR,
    start_ts     TIMESTAMPTZ,
    ts           TIMESTAMPTZ,
    value        DOUBLE,              -- number points; the sum of a histogram or summary
    count        BIGINT,              -- histogram and summary points
    model        VARCHAR,             -- attribute model (token and cost metrics)
    type         VARCHAR,             -- attribute type (input/output/..., added/removed, ...)
    attributes   JSON NOT NULL
);
