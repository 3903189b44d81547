package sqlitestate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"nexus.local/services/orchestrator/state"
)

// leaseRow is a run's schedule entry.
type leaseRow struct {
	owner string
	due   int64
}

func getLease(ctx context.Context, tx *sql.Tx, runID string) (leaseRow, bool, error) {
	var l leaseRow
	err := tx.QueryRowContext(ctx, `SELECT owner, due FROM hot_leases WHERE run_id = $1`, runID).Scan(&l.owner, &l.due)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("read the lease of run %s: %w", runID, err)
	}
	return l, true, nil
}

// setLease writes the run's owner and due time.
func setLease(ctx context.Context, tx *sql.Tx, l state.Lease, owner string, due int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO hot_leases (run_id, session_id, owner, due) VALUES ($1, $2, $3, $4)
		ON CONFLICT (run_id) DO UPDATE SET session_id = excluded.session_id, owner = excluded.owner, due = excluded.due`, l.RunID, l.SessionID, owner, due)
	if err != nil {
		return fmt.Errorf("write the lease of run %s: %w", l.RunID, err)
	}
	return nil
}

// Acquire records a new run unless another owner holds an unexpired lease.
func (s *Store) Acquire(ctx context.Context, l state.Lease, ttl time.Duration) error {
	return s.write(ctx, func(tx *sql.Tx, now int64) error {
		cur, ok, err := getLease(ctx, tx, l.RunID)
		if err != nil {
			return err
		}
		if ok && cur.owner != l.Owner && now < cur.due {
			return state.ErrLeaseLost
		}
		return setLease(ctx, tx, l, l.Owner, now+ttl.Nanoseconds())
	})
}

// held runs fn when l.Owner holds the run's lease, ErrLeaseLost otherwise.
func (s *Store) held(ctx context.Context, l state.Lease, fn func(tx *sql.Tx, now int64) error) error {
	return s.write(ctx, func(tx *sql.Tx, now int64) error {
		cur, ok, err := getLease(ctx, tx, l.RunID)
		if err != nil {
			return err
		}
		if !ok || cur.owner != l.Owner {
			return state.ErrLeaseLost
		}
		return fn(tx, now)
	})
}

// Renew extends a lease its owner still holds, also after it ran out.
func (s *Store) Renew(ctx context.Context, l state.Lease, ttl time.Duration) error {
	return s.held(ctx, l, func(tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(ctx, `UPDATE hot_leases SET due = $1 WHERE run_id = $2`, now+ttl.Nanoseconds(), l.RunID)
		return err
	})
}

// Suspend leaves the run without an owner, due after wait.
func (s *Store) Suspend(ctx context.Context, l state.Lease, wait time.Duration) error {
	return s.held(ctx, l, func(tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(ctx, `UPDATE hot_leases SET owner = '', due = $1 WHERE run_id = $2`, now+wait.Nanoseconds(), l.RunID)
		return err
	})
}

// Wake makes a suspended run due now.
func (s *Store) Wake(ctx context.Context, runID string) error {
	return s.write(ctx, func(tx *sql.Tx, now int64) error { return wakeTx(ctx, tx, runID, now) })
}

func wakeTx(ctx context.Context, tx *sql.Tx, runID string, now int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE hot_leases SET due = $1 WHERE run_id = $2 AND owner = '' AND due > $1`, now, runID)
	return err
}

// Claim takes a due run.
func (s *Store) Claim(ctx context.Context, l state.Lease, ttl time.Duration) error {
	return s.write(ctx, func(tx *sql.Tx, now int64) error { return claimTx(ctx, tx, l, ttl, now) })
}

// WakeClaim wakes the run and claims it in one transaction.
func (s *Store) WakeClaim(ctx context.Context, l state.Lease, ttl time.Duration) error {
	return s.write(ctx, func(tx *sql.Tx, now int64) error {
		if err := wakeTx(ctx, tx, l.RunID, now); err != nil {
			return err
		}
		return claimTx(ctx, tx, l, ttl, now)
	})
}

func claimTx(ctx context.Context, tx *sql.Tx, l state.Lease, ttl time.Duration, now int64) error {
	cur, ok, err := getLease(ctx, tx, l.RunID)
	if err != nil {
		return err
	}
	if !ok || now < cur.due {
		return state.ErrLeaseLost
	}
	_, err = tx.ExecContext(ctx, `UPDATE hot_leases SET owner = $1, due = $2 WHERE run_id = $3`, l.Owner, now+ttl.Nanoseconds(), l.RunID)
	return err
}

// Release forgets the run when l.Owner holds it.
func (s *Store) Release(ctx context.Context, l state.Lease) error {
	return s.write(ctx, func(tx *sql.Tx, _ int64) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM hot_leases WHERE run_id = $1 AND owner = $2`, l.RunID, l.Owner)
		return err
	})
}

// Due returns up to limit runs whose due time has passed, oldest first.
func (s *Store) Due(ctx context.Context, limit int) ([]state.Lease, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, session_id, owner FROM hot_leases WHERE due <= $1 ORDER BY due, run_id LIMIT $2`, s.now(), limit)
	if err != nil {
		return nil, fmt.Errorf("list due runs: %w", err)
	}
	defer rows.Close()
	var out []state.Lease
	for rows.Next() {
		var l state.Lease
		if err := rows.Scan(&l.RunID, &l.SessionID, &l.Owner); err != nil {
			return nil, fmt.Errorf("list due runs: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list due runs: %w", err)
	}
	return out, nil
}
