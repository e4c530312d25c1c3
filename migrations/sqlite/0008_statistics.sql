-- Request statistics (issue 17): one row per request on the public port, written in batches by
-- the control plane's flusher, and daily aggregates per (day, endpoint, status) computed at
-- 02:00 UTC. Neither is snapshot state. ts and day are Unix seconds (day = 00:00 UTC of the
-- date); durations are microseconds.

CREATE TABLE stats_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts BIGINT NOT NULL,
    endpoint VARCHAR(255) NOT NULL,
    method VARCHAR(16) NOT NULL,
    status_code BIGINT NOT NULL,
    duration_us BIGINT NOT NULL,
    client_ip VARCHAR(45) NULL,
    country_code VARCHAR(2) NULL,
    user_agent VARCHAR(512) NULL,
    client_entity_id TEXT NULL,
    query_params TEXT NULL,
    request_size BIGINT NOT NULL,
    response_size BIGINT NOT NULL,
    error_type VARCHAR(16) NULL
);

CREATE INDEX stats_requests_ts ON stats_requests (ts);

CREATE TABLE stats_daily (
    day BIGINT NOT NULL,
    endpoint VARCHAR(255) NOT NULL,
    status_code BIGINT NOT NULL,
    request_count BIGINT NOT NULL,
    error_count BIGINT NOT NULL,
    p50_us BIGINT NOT NULL,
    p95_us BIGINT NOT NULL,
    p99_us BIGINT NOT NULL,
    avg_us BIGINT NOT NULL,
    min_us BIGINT NOT NULL,
    max_us BIGINT NOT NULL,
    top_user_agents TEXT NOT NULL,
    top_countries TEXT NOT NULL,
    top_clients TEXT NOT NULL,
    top_params TEXT NOT NULL,
    PRIMARY KEY (day, endpoint, status_code)
);
