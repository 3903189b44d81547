package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"
)

// Dispatch is one row of the audit log: a script that left for a host.
type Dispatch struct {
	// ID orders the log; it is set by the database.
	ID                int64
	SessionID         string
	RunID             string
	ToolCallID        string
	Kind              string
	User              string
	HostApp           string
	CapabilityVersion string
	SHA256            string
	// Code is the exact bytes; ListDispatches fills it only when asked.
	Code         []byte
	DispatchedAt time.Time
	// Attempt numbers the sendings of one tool call from 1 (0 for rows
	// written before attempts were kept); it is set by the database. Each
	// attempt has its own outcome: a call sent again after the host refused
	// it is another attempt, maybe of other bytes.
	Attempt int
	// Reviewer approved the script at ReviewedAt, when a person reviewed it
	// (empty and zero otherwise); Edited says they changed it first, so Code
	// is their version.
	Reviewer   string
	ReviewedAt time.Time
	Edited     bool
	// Outcome and ErrorType say how the tool call ended; empty while it has
	// not ended (or its end was never recorded).
	Outcome    string
	ErrorType  string
	OutcomeAt  time.Time
	HasOutcome bool
	// OutcomeReviewer declined the call at OutcomeReviewedAt: the review
	// recorded with the outcome rather than with the dispatch.
	OutcomeReviewer   string
	OutcomeReviewedAt time.Time
}

// Outcome says how one attempt of a dispatched tool call ended.
type Outcome struct {
	SessionID  string
	RunID      string
	ToolCallID string
	// Attempt is the sending this outcome ends (AppendDispatches set it);
	// 0 is the call's latest sending.
	Attempt   int
	Outcome   string
	ErrorType string
	At        time.Time
	// Reviewer declined the call at ReviewedAt; empty and zero unless a
	// person declined it.
	Reviewer   string
	ReviewedAt time.Time
}

// ErrOutcomeRecorded means the tool call's outcome is already in the log; the
// log is append-only, so a second, different outcome is refused.
const ErrOutcomeRecorded = storeError("the outcome of this tool call is already recorded")

// ErrNoSuchAttempt means an outcome names an attempt the audit log never
// recorded for its tool call.
const ErrNoSuchAttempt = storeError("the audit log has no such attempt of this tool call")

type storeError string

func (e storeError) Error() string { return string(e) }

// callKey names a tool call of a run.
type callKey struct{ run, id string }

// AppendDispatches writes ds in one transaction: all of them or none. It is
// the only way rows enter the audit log; none is ever updated. The rows of
// one tool call in ds (its script and epilogue) are the call's next attempt,
// which it sets in each row's Attempt.
func (d *DB) AppendDispatches(ctx context.Context, ds []Dispatch) error {
	ctx, cancel := d.op(ctx)
	defer cancel()
	attempts := map[callKey]int{}
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		// A retried transaction numbers again from what the log holds.
		clear(attempts)
		for _, x := range ds {
			c := callKey{x.RunID, x.ToolCallID}
			attempt, ok := attempts[c]
			if !ok {
				if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(attempt), 0) + 1 FROM audit_dispatches WHERE run_id = $1 AND tool_call_id = $2`,
					x.RunID, x.ToolCallID).Scan(&attempt); err != nil {
					return err
				}
				attempts[c] = attempt
			}
			code := x.Code
			if code == nil {
				code = []byte{}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO audit_dispatches
				(session_id, run_id, tool_call_id, kind, user_id, host_app, capability_version, sha256, code, dispatched_at,
				 reviewer, review_time, edited, attempt)
				VALUES (`+placeholders(1, 14)+`)`,
				x.SessionID, x.RunID, x.ToolCallID, x.Kind, x.User, x.HostApp, x.CapabilityVersion, x.SHA256, code, x.DispatchedAt.UnixNano(),
				x.Reviewer, nanos(x.ReviewedAt), x.Edited, attempt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return d.fail("write the audit log", err)
	}
	for i := range ds {
		ds[i].Attempt = attempts[callKey{ds[i].RunID, ds[i].ToolCallID}]
	}
	return nil
}

// latestAttempt is the attempt of the tool call ($1 run, $2 call) sent last:
// what an outcome that names no attempt ends. A writer that knows the
// attempt names it, since an outcome can be written after the call was
// sent again (a replica's sweep standing in for the one that decided).
const latestAttempt = `COALESCE((SELECT MAX(attempt) FROM audit_dispatches WHERE run_id = $1 AND tool_call_id = $2), 0)`

// RecordOutcome appends how attempt o.Attempt of a tool call ended (its
// latest when 0). Recording the same outcome twice is answered the same; a
// different one gives ErrOutcomeRecorded, and an attempt the log never
// recorded ErrNoSuchAttempt.
func (d *DB) RecordOutcome(ctx context.Context, o Outcome) error {
	ctx, cancel := d.op(ctx)
	defer cancel()
	var latest int
	if err := d.queryRow(ctx, `SELECT `+latestAttempt, o.RunID, o.ToolCallID).Scan(&latest); err != nil {
		return d.fail("read the audit log", err)
	}
	attempt := latest
	if o.Attempt != 0 {
		if o.Attempt < 0 || o.Attempt > latest {
			return ErrNoSuchAttempt
		}
		attempt = o.Attempt
	}
	res, err := d.exec(ctx, `INSERT INTO audit_outcomes (run_id, tool_call_id, attempt, session_id, outcome, error_type, recorded_at, reviewer, review_time)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (run_id, tool_call_id, attempt) DO NOTHING`,
		o.RunID, o.ToolCallID, attempt, o.SessionID, o.Outcome, o.ErrorType, o.At.UnixNano(), o.Reviewer, nanos(o.ReviewedAt))
	if err != nil {
		return d.fail("write the audit log", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return nil
	}
	var outcome, errType, reviewer string
	var reviewedAt sql.NullInt64
	err = d.queryRow(ctx, `SELECT outcome, error_type, reviewer, review_time FROM audit_outcomes WHERE run_id = $1 AND tool_call_id = $2 AND attempt = $3`,
		o.RunID, o.ToolCallID, attempt).Scan(&outcome, &errType, &reviewer, &reviewedAt)
	if err != nil {
		return d.fail("read the audit log", err)
	}
	// A repeat is the same record: the same end and the same decision.
	if outcome != o.Outcome || errType != o.ErrorType || reviewer != o.Reviewer || reviewedAt != nanos(o.ReviewedAt) {
		return ErrOutcomeRecorded
	}
	return nil
}

// Page bounds one read of the audit log.
type Page struct {
	// AfterID continues after the entry with this ID; 0 starts at the first.
	AfterID int64
	// Limit is the most entries to return; 0 means all.
	Limit int
	// MaxCodeBytes ends a page with code once it holds this many script bytes
	// (it always holds one entry); 0 means no bound.
	MaxCodeBytes int
}

// ListDispatches returns a session's audit log, oldest first, with each
// dispatch's outcome; withCode fills in the script bytes.
func (d *DB) ListDispatches(ctx context.Context, sessionID string, withCode bool) ([]Dispatch, error) {
	out, _, err := d.ListDispatchPage(ctx, sessionID, withCode, Page{})
	return out, err
}

// ListDispatchPage is ListDispatches one page at a time; more says whether
// entries follow the page.
func (d *DB) ListDispatchPage(ctx context.Context, sessionID string, withCode bool, p Page) (out []Dispatch, more bool, err error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	code := "''"
	if withCode {
		code = "d.code"
	}
	limit := int64(math.MaxInt32)
	if p.Limit > 0 {
		// One more than asked says whether another page follows.
		limit = int64(p.Limit) + 1
	}
	rows, err := d.query(ctx, `SELECT d.id, d.session_id, d.run_id, d.tool_call_id, d.kind, d.user_id, d.host_app,
			d.capability_version, d.sha256, `+code+`, d.dispatched_at, d.reviewer, d.review_time, d.edited, d.attempt,
			o.outcome, o.error_type, o.recorded_at, o.reviewer, o.review_time
		FROM audit_dispatches d
		LEFT JOIN audit_outcomes o ON o.run_id = d.run_id AND o.tool_call_id = d.tool_call_id AND o.attempt = d.attempt
		WHERE d.session_id = $1 AND d.id > $2 ORDER BY d.id LIMIT $3`, sessionID, p.AfterID, limit)
	if err != nil {
		return nil, false, d.fail("read the audit log", err)
	}
	defer rows.Close()
	codeBytes := 0
	for rows.Next() {
		var x Dispatch
		var at int64
		var outcome, errType, outReviewer sql.NullString
		var outAt, reviewedAt, outReviewedAt sql.NullInt64
		var code []byte
		if err := rows.Scan(&x.ID, &x.SessionID, &x.RunID, &x.ToolCallID, &x.Kind, &x.User, &x.HostApp,
			&x.CapabilityVersion, &x.SHA256, &code, &at, &x.Reviewer, &reviewedAt, &x.Edited, &x.Attempt,
			&outcome, &errType, &outAt, &outReviewer, &outReviewedAt); err != nil {
			return nil, false, d.fail("read the audit log", err)
		}
		if (p.Limit > 0 && len(out) == p.Limit) || (p.MaxCodeBytes > 0 && len(out) > 0 && codeBytes+len(code) > p.MaxCodeBytes) {
			more = true
			break
		}
		codeBytes += len(code)
		if withCode {
			x.Code = append([]byte{}, code...)
		}
		x.DispatchedAt = time.Unix(0, at).UTC()
		x.ReviewedAt = fromNanos(reviewedAt)
		if outcome.Valid {
			x.HasOutcome = true
			x.Outcome, x.ErrorType, x.OutcomeAt = outcome.String, errType.String, time.Unix(0, outAt.Int64).UTC()
			x.OutcomeReviewer, x.OutcomeReviewedAt = outReviewer.String, fromNanos(outReviewedAt)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, false, d.fail("read the audit log", err)
	}
	return out, more, nil
}

// CountDispatches counts the audit rows of the sessions whose id starts with
// prefix; tests and operators use it to check that nothing was lost.
func (d *DB) CountDispatches(ctx context.Context, prefix string) (int, error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	var n int
	if err := d.queryRow(ctx, `SELECT COUNT(*) FROM audit_dispatches WHERE session_id LIKE $1 ESCAPE '\'`, likePrefix(prefix)).Scan(&n); err != nil {
		return 0, d.fail("count the audit log", err)
	}
	return n, nil
}

// ExpireAudit removes audit rows written before before: the audit log's own
// retention, independent of sessions being deleted.
func (d *DB) ExpireAudit(ctx context.Context, before time.Time) (int64, error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	var n int64
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM audit_dispatches WHERE dispatched_at < $1`, before.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		if err != nil {
			return err
		}
		// An outcome goes with its dispatches: once none of them is left.
		_, err = tx.ExecContext(ctx, `DELETE FROM audit_outcomes WHERE recorded_at < $1 AND NOT EXISTS
			(SELECT 1 FROM audit_dispatches d WHERE d.run_id = audit_outcomes.run_id AND d.tool_call_id = audit_outcomes.tool_call_id
				AND d.attempt = audit_outcomes.attempt)`, before.UnixNano())
		return err
	})
	if err != nil {
		return 0, d.fail("expire the audit log", err)
	}
	return n, nil
}

// likePrefix escapes a LIKE pattern's wildcards and matches the prefix.
func likePrefix(p string) string {
	var b []byte
	for i := 0; i < len(p); i++ {
		if p[i] == '%' || p[i] == '_' || p[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, p[i])
	}
	return string(b) + "%"
}

// nanos stores an optional time: NULL when t is zero.
func nanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// fromNanos reads an optional time: zero when NULL.
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// isNoRows reports whether err is sql.ErrNoRows.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
