-- The 3D models of calls' results, for the person's review: one row per
-- session, call and state (1 after the script, 2 a preview's before), kept as
-- long as the session's hot state.

-- +goose Up
CREATE TABLE hot_models (
    session_id TEXT    NOT NULL,
    call_id    TEXT    NOT NULL,
    state      INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    expires    INTEGER NOT NULL,
    PRIMARY KEY (session_id, call_id, state)
);

-- +goose Down
DROP TABLE hot_models;
