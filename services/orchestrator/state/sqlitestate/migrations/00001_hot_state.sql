-- The orchestrator's hot state for one process: what state/redisstate keeps
-- in Redis. Times are unix nanoseconds; an expiry of 0 means never.

-- +goose Up
CREATE TABLE hot_sessions (
    session_id  TEXT    NOT NULL PRIMARY KEY,
    owner       TEXT    NOT NULL,
    create_time INTEGER NOT NULL,
    body        BLOB    NOT NULL,
    expires     INTEGER NOT NULL
);
CREATE INDEX hot_sessions_owner ON hot_sessions (owner, create_time);

-- One row per transcript message, in order.
CREATE TABLE hot_transcripts (
    session_id TEXT    NOT NULL,
    idx        INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    expires    INTEGER NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;

-- The pending tool call of each session and, once accepted, its result.
CREATE TABLE hot_mailboxes (
    session_id TEXT    NOT NULL PRIMARY KEY,
    call_id    TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    expires    INTEGER NOT NULL,
    result     BLOB,
    trace      TEXT,
    digest     TEXT,
    decided    INTEGER NOT NULL DEFAULT 0
);

-- How each closed tool call was decided (digest 'none': without a result).
CREATE TABLE hot_decided (
    session_id TEXT    NOT NULL,
    call_id    TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    digest     TEXT    NOT NULL,
    expires    INTEGER NOT NULL,
    PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;

CREATE TABLE hot_signals (
    run_id  TEXT    NOT NULL PRIMARY KEY,
    expires INTEGER NOT NULL
);

CREATE TABLE hot_event_logs (
    run_id   TEXT    NOT NULL PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    finished INTEGER NOT NULL,
    expires  INTEGER NOT NULL
);
CREATE TABLE hot_events (
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    body   BLOB    NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE hot_runs (
    run_id TEXT NOT NULL PRIMARY KEY,
    body   BLOB NOT NULL
);

-- The schedule of unfinished runs: owner is empty while a run is suspended.
CREATE TABLE hot_leases (
    run_id     TEXT    NOT NULL PRIMARY KEY,
    session_id TEXT    NOT NULL,
    owner      TEXT    NOT NULL,
    due        INTEGER NOT NULL
);
CREATE INDEX hot_leases_due ON hot_leases (due, run_id);

-- +goose Down
DROP TABLE hot_leases;
DROP TABLE hot_runs;
DROP TABLE hot_events;
DROP TABLE hot_event_logs;
DROP TABLE hot_signals;
DROP TABLE hot_decided;
DROP TABLE hot_mailboxes;
DROP TABLE hot_transcripts;
DROP TABLE hot_sessions;
