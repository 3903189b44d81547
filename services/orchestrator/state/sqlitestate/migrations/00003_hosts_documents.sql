-- What state/redisstate keeps of linked hosts and session documents, so a
-- restart of the one process loses none of it: the hosts and their token
-- digests, each host's delivery log of calls without a result, pairings in
-- progress and the attempts counted against them, and each session's
-- document as its host last saved it. Times are unix nanoseconds; an expiry
-- of 0 means never.

-- +goose Up
CREATE TABLE hot_hosts (
    host_id      TEXT    NOT NULL PRIMARY KEY,
    owner        TEXT    NOT NULL,
    token_digest TEXT    NOT NULL UNIQUE,
    create_time  INTEGER NOT NULL,
    body         BLOB    NOT NULL
);
CREATE INDEX hot_hosts_owner ON hot_hosts (owner, create_time, host_id);

-- The open link of a host, until expires (its link renews it); seen is
-- when the last one recorded would lapse.
CREATE TABLE hot_host_presence (
    host_id TEXT    NOT NULL PRIMARY KEY,
    conn_id TEXT    NOT NULL,
    expires INTEGER NOT NULL
);

-- The next seq of each delivery log, never reused: a link resumes after
-- the seq it last saw.
CREATE TABLE hot_host_log_seqs (
    log_key TEXT    NOT NULL PRIMARY KEY,
    next    INTEGER NOT NULL
);
CREATE TABLE hot_host_calls (
    log_key      TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    session_id   TEXT    NOT NULL,
    tool_call_id TEXT    NOT NULL,
    body         BLOB    NOT NULL,
    PRIMARY KEY (log_key, seq),
    UNIQUE (log_key, session_id, tool_call_id)
);

CREATE TABLE hot_pairings (
    device_digest TEXT    NOT NULL PRIMARY KEY,
    user_code     TEXT    NOT NULL UNIQUE,
    body          TEXT    NOT NULL,
    expires       INTEGER NOT NULL
);

CREATE TABLE hot_attempts (
    attempt_key TEXT    NOT NULL PRIMARY KEY,
    n           INTEGER NOT NULL,
    expires     INTEGER NOT NULL
);

CREATE TABLE hot_documents (
    session_id TEXT    NOT NULL PRIMARY KEY,
    body       BLOB    NOT NULL,
    expires    INTEGER NOT NULL
);

-- +goose Down
DROP TABLE hot_documents;
DROP TABLE hot_attempts;
DROP TABLE hot_pairings;
DROP TABLE hot_host_calls;
DROP TABLE hot_host_log_seqs;
DROP TABLE hot_host_presence;
DROP TABLE hot_hosts;
