-- Transcript messages and event-log chunks become rows of ordinary (rowid)
-- tables. A WITHOUT ROWID table keeps the whole row in its primary key's
-- b-tree, and a seek there reads a row whose key overflows its page whole to
-- compare it: every insert beside a message of a 6 MiB script output read
-- those megabytes again. SQLite's own advice is to keep WITHOUT ROWID for
-- rows under about a twentieth of a page (https://www.sqlite.org/withoutrowid.html,
-- "When To Use WITHOUT ROWID"); these rows carry a script's output and views.
--
-- A transcript is saved whole after every turn, but only its new or changed
-- messages are written: each row keeps its body's SHA-256 ahead of the body
-- (so reading it does not walk the body's overflow pages), and the
-- transcript's expiry moves to a row of its own (refreshing it rewrote every
-- message). Rows copied here have no digest, so their next save writes them.

-- +goose Up
CREATE TABLE hot_transcript_heads (
    session_id TEXT    NOT NULL PRIMARY KEY,
    expires    INTEGER NOT NULL
);
INSERT INTO hot_transcript_heads (session_id, expires)
    SELECT session_id, MAX(expires) FROM hot_transcripts GROUP BY session_id;

CREATE TABLE hot_transcripts_rows (
    session_id TEXT    NOT NULL,
    idx        INTEGER NOT NULL,
    digest     BLOB,
    body       BLOB    NOT NULL,
    PRIMARY KEY (session_id, idx)
);
INSERT INTO hot_transcripts_rows (session_id, idx, body)
    SELECT session_id, idx, body FROM hot_transcripts;
DROP TABLE hot_transcripts;
ALTER TABLE hot_transcripts_rows RENAME TO hot_transcripts;

CREATE TABLE hot_events_rows (
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    body   BLOB    NOT NULL,
    PRIMARY KEY (run_id, seq)
);
INSERT INTO hot_events_rows (run_id, seq, body) SELECT run_id, seq, body FROM hot_events;
DROP TABLE hot_events;
ALTER TABLE hot_events_rows RENAME TO hot_events;

-- +goose Down
CREATE TABLE hot_transcripts_clustered (
    session_id TEXT    NOT NULL,
    idx        INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    expires    INTEGER NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;
INSERT INTO hot_transcripts_clustered (session_id, idx, body, expires)
    SELECT t.session_id, t.idx, t.body, h.expires
    FROM hot_transcripts t JOIN hot_transcript_heads h ON h.session_id = t.session_id;
DROP TABLE hot_transcripts;
DROP TABLE hot_transcript_heads;
ALTER TABLE hot_transcripts_clustered RENAME TO hot_transcripts;

CREATE TABLE hot_events_clustered (
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    body   BLOB    NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO hot_events_clustered (run_id, seq, body) SELECT run_id, seq, body FROM hot_events;
DROP TABLE hot_events;
ALTER TABLE hot_events_clustered RENAME TO hot_events;
