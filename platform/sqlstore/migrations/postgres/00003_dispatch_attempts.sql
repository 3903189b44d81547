-- A tool call can leave more than once: under the preview policy an approved
-- script the host refuses (the document changed since its preview) is
-- previewed, approved and sent again, maybe as other bytes. Each sending is
-- an attempt, numbered from 1 within its tool call, and each attempt has its
-- own outcome. Rows written before attempts existed are attempt 0, as are
-- their outcomes.

-- +goose Up
ALTER TABLE audit_dispatches ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
CREATE INDEX audit_dispatches_call ON audit_dispatches (run_id, tool_call_id, attempt);
ALTER TABLE audit_outcomes ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_outcomes DROP CONSTRAINT audit_outcomes_pkey;
ALTER TABLE audit_outcomes ADD PRIMARY KEY (run_id, tool_call_id, attempt);

-- +goose Down
DELETE FROM audit_outcomes o WHERE EXISTS (SELECT 1 FROM audit_outcomes n
    WHERE n.run_id = o.run_id AND n.tool_call_id = o.tool_call_id AND n.attempt > o.attempt);
ALTER TABLE audit_outcomes DROP CONSTRAINT audit_outcomes_pkey;
ALTER TABLE audit_outcomes ADD PRIMARY KEY (run_id, tool_call_id);
ALTER TABLE audit_outcomes DROP COLUMN attempt;
DROP INDEX audit_dispatches_call;
ALTER TABLE audit_dispatches DROP COLUMN attempt;
