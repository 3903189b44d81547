-- A tool call can leave more than once: under the preview policy an approved
-- script the host refuses (the document changed since its preview) is
-- previewed, approved and sent again, maybe as other bytes. Each sending is
-- an attempt, numbered from 1 within its tool call, and each attempt has its
-- own outcome. Rows written before attempts existed are attempt 0, as are
-- their outcomes. SQLite cannot change a primary key in place, so the
-- outcomes table is rebuilt.

-- +goose Up
ALTER TABLE audit_dispatches ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
CREATE INDEX audit_dispatches_call ON audit_dispatches (run_id, tool_call_id, attempt);
CREATE TABLE audit_outcomes_by_attempt (
    run_id       TEXT    NOT NULL,
    tool_call_id TEXT    NOT NULL,
    attempt      INTEGER NOT NULL,
    session_id   TEXT    NOT NULL,
    outcome      TEXT    NOT NULL,
    error_type   TEXT    NOT NULL,
    recorded_at  BIGINT  NOT NULL,
    reviewer     TEXT    NOT NULL DEFAULT '',
    review_time  BIGINT,
    PRIMARY KEY (run_id, tool_call_id, attempt)
);
INSERT INTO audit_outcomes_by_attempt (run_id, tool_call_id, attempt, session_id, outcome, error_type, recorded_at, reviewer, review_time)
    SELECT run_id, tool_call_id, 0, session_id, outcome, error_type, recorded_at, reviewer, review_time FROM audit_outcomes;
DROP TABLE audit_outcomes;
ALTER TABLE audit_outcomes_by_attempt RENAME TO audit_outcomes;
CREATE INDEX audit_outcomes_time ON audit_outcomes (recorded_at);

-- +goose Down
CREATE TABLE audit_outcomes_by_call (
    run_id       TEXT   NOT NULL,
    tool_call_id TEXT   NOT NULL,
    session_id   TEXT   NOT NULL,
    outcome      TEXT   NOT NULL,
    error_type   TEXT   NOT NULL,
    recorded_at  BIGINT NOT NULL,
    reviewer     TEXT   NOT NULL DEFAULT '',
    review_time  BIGINT,
    PRIMARY KEY (run_id, tool_call_id)
);
INSERT OR IGNORE INTO audit_outcomes_by_call (run_id, tool_call_id, session_id, outcome, error_type, recorded_at, reviewer, review_time)
    SELECT run_id, tool_call_id, session_id, outcome, error_type, recorded_at, reviewer, review_time FROM audit_outcomes ORDER BY attempt DESC;
DROP TABLE audit_outcomes;
ALTER TABLE audit_outcomes_by_call RENAME TO audit_outcomes;
CREATE INDEX audit_outcomes_time ON audit_outcomes (recorded_at);
DROP INDEX audit_dispatches_call;
ALTER TABLE audit_dispatches DROP COLUMN attempt;
