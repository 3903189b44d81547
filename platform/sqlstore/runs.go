package sqlstore

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"time"
)

// OutcomeRunning marks a run that started and has not ended (or whose end was
// never recorded because its replica died).
const OutcomeRunning = "running"

// Usage is a run's token accounting and cost.
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	ReasoningTokens  int64
	CostUSD          float64
}

// Run is one row of the run history.
type Run struct {
	RunID     string
	SessionID string
	Owner     string
	HostApp   string
	Prompt    string
	// Models are the models the run used, in the order it first used them.
	Models       []string
	Outcome      string
	ErrorCode    string
	ErrorMessage string
	Turns        int
	Usage        Usage
	StartedAt    time.Time
	EndedAt      time.Time
	// ToolCalls counts the run's tool calls by outcome.
	ToolCalls map[string]int
}

// ToolCall is how one tool call of a run ended.
type ToolCall struct {
	SessionID  string
	RunID      string
	ToolCallID string
	ToolName   string
	Outcome    string
	ErrorType  string
	At         time.Time
}

// StartRun records that a run began; its outcome is OutcomeRunning until
// FinishRun.
func (d *DB) StartRun(ctx context.Context, r Run) error {
	ctx, cancel := d.op(ctx)
	defer cancel()
	_, err := d.exec(ctx, `INSERT INTO runs (run_id, session_id, owner, host_app, prompt, models, outcome, error_code, error_message,
			turns, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, started_at, ended_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, '', '', 0, 0, 0, 0, 0, 0, 0, $8, 0)`,
		r.RunID, r.SessionID, r.Owner, r.HostApp, r.Prompt, strings.Join(r.Models, ","), OutcomeRunning, r.StartedAt.UnixNano())
	if err != nil {
		return d.fail("record run "+r.RunID, err)
	}
	return nil
}

// FinishRun records how a run ended, its turns and usage. A run that is not
// in the history (its session was deleted meanwhile) is left out.
func (d *DB) FinishRun(ctx context.Context, r Run) error {
	ctx, cancel := d.op(ctx)
	defer cancel()
	u := r.Usage
	_, err := d.exec(ctx, `UPDATE runs SET models = $2, outcome = $3, error_code = $4, error_message = $5, turns = $6,
			input_tokens = $7, output_tokens = $8, cache_read_tokens = $9, cache_write_tokens = $10, reasoning_tokens = $11,
			cost_usd = $12, ended_at = $13
		WHERE run_id = $1`,
		r.RunID, strings.Join(r.Models, ","), r.Outcome, r.ErrorCode, r.ErrorMessage, r.Turns,
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.CostUSD, r.EndedAt.UnixNano())
	if err != nil {
		return d.fail("record the end of run "+r.RunID, err)
	}
	return nil
}

// RecordToolCall records how one tool call of a run ended; the same call
// recorded again keeps its first outcome.
func (d *DB) RecordToolCall(ctx context.Context, c ToolCall) error {
	ctx, cancel := d.op(ctx)
	defer cancel()
	_, err := d.exec(ctx, `INSERT INTO run_tool_calls (run_id, tool_call_id, session_id, tool_name, outcome, error_type, recorded_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, tool_call_id) DO NOTHING`,
		c.RunID, c.ToolCallID, c.SessionID, c.ToolName, c.Outcome, c.ErrorType, c.At.UnixNano())
	if err != nil {
		return d.fail("record tool call "+c.ToolCallID, err)
	}
	return nil
}

// ListRuns returns a session's runs, oldest first, with their tool calls
// counted by outcome.
func (d *DB) ListRuns(ctx context.Context, sessionID string) ([]Run, error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	rows, err := d.query(ctx, `SELECT run_id, session_id, owner, host_app, prompt, models, outcome, error_code, error_message,
			turns, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, started_at, ended_at
		FROM runs WHERE session_id = $1 ORDER BY started_at, run_id`, sessionID)
	if err != nil {
		return nil, d.fail("read the run history", err)
	}
	defer rows.Close()
	var out []Run
	index := map[string]int{}
	for rows.Next() {
		var r Run
		var models string
		var started, ended int64
		u := &r.Usage
		if err := rows.Scan(&r.RunID, &r.SessionID, &r.Owner, &r.HostApp, &r.Prompt, &models, &r.Outcome, &r.ErrorCode, &r.ErrorMessage,
			&r.Turns, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.ReasoningTokens, &u.CostUSD, &started, &ended); err != nil {
			return nil, d.fail("read the run history", err)
		}
		if models != "" {
			r.Models = strings.Split(models, ",")
		}
		r.StartedAt = time.Unix(0, started).UTC()
		if ended != 0 {
			r.EndedAt = time.Unix(0, ended).UTC()
		}
		r.ToolCalls = map[string]int{}
		index[r.RunID] = len(out)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, d.fail("read the run history", err)
	}
	rows.Close()
	counts, err := d.query(ctx, `SELECT run_id, outcome, COUNT(*) FROM run_tool_calls WHERE session_id = $1 GROUP BY run_id, outcome`, sessionID)
	if err != nil {
		return nil, d.fail("read the run history", err)
	}
	defer counts.Close()
	for counts.Next() {
		var runID, outcome string
		var n int
		if err := counts.Scan(&runID, &outcome, &n); err != nil {
			return nil, d.fail("read the run history", err)
		}
		if i, ok := index[runID]; ok {
			out[i].ToolCalls[outcome] = n
		}
	}
	if err := counts.Err(); err != nil {
		return nil, d.fail("read the run history", err)
	}
	return out, nil
}

// RunIDs returns the ids of a session's runs, so the hot state of each can be
// found when the session is deleted.
func (d *DB) RunIDs(ctx context.Context, sessionID string) ([]string, error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	rows, err := d.query(ctx, `SELECT run_id FROM runs WHERE session_id = $1`, sessionID)
	if err != nil {
		return nil, d.fail("read the run history", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, d.fail("read the run history", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, d.fail("read the run history", err)
	}
	sort.Strings(ids)
	return ids, nil
}

// DeleteHistory removes every history row of a session: its runs and their
// tool calls. The audit log is not touched; it follows its own retention.
func (d *DB) DeleteHistory(ctx context.Context, sessionID string) error {
	ctx, cancel := d.op(ctx)
	defer cancel()
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_tool_calls WHERE session_id = $1`, sessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE session_id = $1`, sessionID)
		return err
	})
	if err != nil {
		return d.fail("delete the history of session "+sessionID, err)
	}
	return nil
}

// ExpireHistory removes the runs that started before before, with their tool
// calls: the history's retention.
func (d *DB) ExpireHistory(ctx context.Context, before time.Time) (int64, error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	var n int64
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_tool_calls WHERE run_id IN (SELECT run_id FROM runs WHERE started_at < $1)`, before.UnixNano()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE started_at < $1`, before.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, d.fail("expire the run history", err)
	}
	return n, nil
}

// CountRuns counts the history rows of the sessions whose id starts with
// prefix, and how many of them ended (are no longer running).
func (d *DB) CountRuns(ctx context.Context, prefix string) (total, ended int, err error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	err = d.queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN outcome <> $2 THEN 1 ELSE 0 END), 0)
		FROM runs WHERE session_id LIKE $1 ESCAPE '\'`, likePrefix(prefix), OutcomeRunning).Scan(&total, &ended)
	if err != nil {
		return 0, 0, d.fail("count the run history", err)
	}
	return total, ended, nil
}

// HasHistory reports whether any history row of the session is left.
func (d *DB) HasHistory(ctx context.Context, sessionID string) (bool, error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	var one int
	err := d.queryRow(ctx, `SELECT 1 FROM runs WHERE session_id = $1
		UNION ALL SELECT 1 FROM run_tool_calls WHERE session_id = $1 LIMIT 1`, sessionID).Scan(&one)
	if isNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, d.fail("read the run history", err)
	}
	return true, nil
}

// SessionOwner returns who started the session's runs, so its history stays
// readable by its owner after the hot state is gone.
func (d *DB) SessionOwner(ctx context.Context, sessionID string) (owner string, found bool, err error) {
	ctx, cancel := d.op(ctx)
	defer cancel()
	err = d.queryRow(ctx, `SELECT owner FROM runs WHERE session_id = $1 ORDER BY started_at LIMIT 1`, sessionID).Scan(&owner)
	if isNoRows(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, d.fail("read the run history", err)
	}
	return owner, true, nil
}
