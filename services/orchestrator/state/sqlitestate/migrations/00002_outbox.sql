-- The outbox of outcome records on their way to the audit log and the run
-- history: put in the same transaction as the decision they record, removed
-- once a drainer wrote them. seq orders them.

-- +goose Up
CREATE TABLE hot_outbox (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    body       BLOB    NOT NULL,
    result     BLOB,
    UNIQUE (session_id, id)
);

-- +goose Down
DROP TABLE hot_outbox;
