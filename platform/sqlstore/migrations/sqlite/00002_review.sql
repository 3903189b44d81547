-- Review of scripts by a person: who approved a dispatched script and when,
-- whether they edited it, and who declined a call and when. The columns have
-- defaults, so rows written before review existed read as unreviewed.
-- SQLite has no boolean type: edited is 0 or 1.

-- +goose Up
ALTER TABLE audit_dispatches ADD COLUMN reviewer    TEXT    NOT NULL DEFAULT '';
ALTER TABLE audit_dispatches ADD COLUMN review_time BIGINT;
ALTER TABLE audit_dispatches ADD COLUMN edited      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_outcomes   ADD COLUMN reviewer    TEXT    NOT NULL DEFAULT '';
ALTER TABLE audit_outcomes   ADD COLUMN review_time BIGINT;

-- +goose Down
ALTER TABLE audit_outcomes   DROP COLUMN review_time;
ALTER TABLE audit_outcomes   DROP COLUMN reviewer;
ALTER TABLE audit_dispatches DROP COLUMN edited;
ALTER TABLE audit_dispatches DROP COLUMN review_time;
ALTER TABLE audit_dispatches DROP COLUMN reviewer;
