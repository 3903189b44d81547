-- The dispatch audit log and the run history. Times are unix nanoseconds so
-- the same queries read and write them on PostgreSQL and SQLite.

-- +goose Up
-- Every script that left for a host, with its exact bytes. Append-only: rows
-- are only ever inserted, and removed by the audit retention.
CREATE TABLE audit_dispatches (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT   NOT NULL,
    run_id             TEXT   NOT NULL,
    tool_call_id       TEXT   NOT NULL,
    kind               TEXT   NOT NULL,
    user_id            TEXT   NOT NULL,
    host_app           TEXT   NOT NULL,
    capability_version TEXT   NOT NULL,
    sha256             TEXT   NOT NULL,
    code               BLOB   NOT NULL,
    dispatched_at      BIGINT NOT NULL
);
CREATE INDEX audit_dispatches_session ON audit_dispatches (session_id, id);
CREATE INDEX audit_dispatches_time ON audit_dispatches (dispatched_at);

-- How each dispatched tool call ended, appended once the result (or its
-- absence) is known, so the dispatch rows themselves are never updated.
CREATE TABLE audit_outcomes (
    run_id       TEXT   NOT NULL,
    tool_call_id TEXT   NOT NULL,
    session_id   TEXT   NOT NULL,
    outcome      TEXT   NOT NULL,
    error_type   TEXT   NOT NULL,
    recorded_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX audit_outcomes_time ON audit_outcomes (recorded_at);

-- One row per run: what was asked, with which model, how it ended and what
-- it cost.
CREATE TABLE runs (
    run_id             TEXT             NOT NULL PRIMARY KEY,
    session_id         TEXT             NOT NULL,
    owner              TEXT             NOT NULL,
    host_app           TEXT             NOT NULL,
    prompt             TEXT             NOT NULL,
    models             TEXT             NOT NULL,
    outcome            TEXT             NOT NULL,
    error_code         TEXT             NOT NULL,
    error_message      TEXT             NOT NULL,
    turns              INTEGER          NOT NULL,
    input_tokens       BIGINT           NOT NULL,
    output_tokens      BIGINT           NOT NULL,
    cache_read_tokens  BIGINT           NOT NULL,
    cache_write_tokens BIGINT           NOT NULL,
    reasoning_tokens   BIGINT           NOT NULL,
    cost_usd           REAL             NOT NULL,
    started_at         BIGINT           NOT NULL,
    ended_at           BIGINT           NOT NULL
);
CREATE INDEX runs_session ON runs (session_id, started_at);
CREATE INDEX runs_started ON runs (started_at);

-- Each tool call of a run with how it ended.
CREATE TABLE run_tool_calls (
    run_id       TEXT   NOT NULL,
    tool_call_id TEXT   NOT NULL,
    session_id   TEXT   NOT NULL,
    tool_name    TEXT   NOT NULL,
    outcome      TEXT   NOT NULL,
    error_type   TEXT   NOT NULL,
    recorded_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX run_tool_calls_session ON run_tool_calls (session_id);

-- +goose Down
DROP TABLE run_tool_calls;
DROP TABLE runs;
DROP TABLE audit_outcomes;
DROP TABLE audit_dispatches;
