-- Request records in batches (controlplane/src/stats/batch.rs): one row per flush of up to
-- 8,192 records, a JSON document of columns, instead of one row per request (whose insert cost
-- the database as much CPU as a fifth of the request itself). ts_first/ts_last bound the
-- records' arrival times (Unix seconds); queries read the batches whose bounds meet their range
-- and filter the records. Rows still in stats_requests are moved into batches at start.

CREATE TABLE stats_batches (
    id BIGSERIAL PRIMARY KEY,
    ts_first BIGINT NOT NULL,
    ts_last BIGINT NOT NULL,
    records BIGINT NOT NULL,
    body TEXT NOT NULL
);

CREATE INDEX stats_batches_ts_last ON stats_batches (ts_last);
