package sqlitestate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Hosts is state.Hosts in the store's SQLite file: linked hosts, their
// tokens, delivery logs and pairings outlive the process, as they outlive a
// replica in Redis. The links watching a log are woken in process.
type Hosts struct{ s *Store }

// NewHosts returns the host registry kept in s's file.
func NewHosts(s *Store) *Hosts { return &Hosts{s: s} }

var _ state.Hosts = (*Hosts)(nil)

// CreateHost stores a new host.
func (h *Hosts) CreateHost(ctx context.Context, lh *agentv1.LinkedHost, tokenDigest string) error {
	b, err := proto.Marshal(lh)
	if err != nil {
		return fmt.Errorf("encode host: %w", err)
	}
	return h.s.write(ctx, func(tx *sql.Tx, _ int64) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM hot_hosts WHERE host_id = $1 OR token_digest = $2`, lh.GetHostId(), tokenDigest).Scan(&n); err != nil {
			return fmt.Errorf("create host %s: %w", lh.GetHostId(), err)
		}
		if n > 0 {
			return state.ErrConflict
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO hot_hosts (host_id, owner, token_digest, create_time, body) VALUES ($1, $2, $3, $4, $5)`,
			lh.GetHostId(), lh.GetOwner(), tokenDigest, lh.GetCreateTime().AsTime().UnixNano(), b); err != nil {
			return fmt.Errorf("create host %s: %w", lh.GetHostId(), err)
		}
		return nil
	})
}

// HostByToken finds a host by its token's digest.
func (h *Hosts) HostByToken(ctx context.Context, tokenDigest string) (*agentv1.LinkedHost, error) {
	var id string
	err := h.s.db.QueryRowContext(ctx, `SELECT host_id FROM hot_hosts WHERE token_digest = $1`, tokenDigest).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("find host by token: %w", err)
	}
	return h.GetHost(ctx, id)
}

// GetHost returns a host with its presence.
func (h *Hosts) GetHost(ctx context.Context, hostID string) (*agentv1.LinkedHost, error) {
	return getHost(ctx, h.s.db, hostID, h.s.now())
}

func getHost(ctx context.Context, q querier, hostID string, now int64) (*agentv1.LinkedHost, error) {
	var (
		b       []byte
		expires sql.NullInt64
	)
	err := q.QueryRowContext(ctx, `SELECT h.body, p.expires FROM hot_hosts h LEFT JOIN hot_host_presence p ON p.host_id = h.host_id WHERE h.host_id = $1`,
		hostID).Scan(&b, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get host %s: %w", hostID, err)
	}
	out := &agentv1.LinkedHost{}
	if err := proto.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decode host %s: %w", hostID, err)
	}
	out.Online = expires.Valid && now < expires.Int64
	if out.Online {
		out.OfflineSince = nil
	} else if expires.Valid && out.GetOfflineSince() == nil {
		// The link's process went away without closing it: offline since
		// its presence lapsed.
		out.OfflineSince = timestamppb.New(time.Unix(0, expires.Int64))
	}
	return out, nil
}

// UpdateHost applies fn in one transaction.
func (h *Hosts) UpdateHost(ctx context.Context, hostID string, fn func(*agentv1.LinkedHost) error) (*agentv1.LinkedHost, error) {
	var out *agentv1.LinkedHost
	err := h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		lh, err := storedHost(ctx, tx, hostID)
		if err != nil {
			return err
		}
		if err := fn(lh); err != nil {
			return err
		}
		lh.Online = false
		if err := putHost(ctx, tx, lh); err != nil {
			return err
		}
		out, err = getHost(ctx, tx, hostID, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// storedHost reads a host as stored, without its presence.
func storedHost(ctx context.Context, tx *sql.Tx, hostID string) (*agentv1.LinkedHost, error) {
	var b []byte
	err := tx.QueryRowContext(ctx, `SELECT body FROM hot_hosts WHERE host_id = $1`, hostID).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read host %s: %w", hostID, err)
	}
	lh := &agentv1.LinkedHost{}
	if err := proto.Unmarshal(b, lh); err != nil {
		return nil, fmt.Errorf("decode host %s: %w", hostID, err)
	}
	return lh, nil
}

// putHost writes a stored host's body.
func putHost(ctx context.Context, tx *sql.Tx, lh *agentv1.LinkedHost) error {
	b, err := proto.Marshal(lh)
	if err != nil {
		return fmt.Errorf("encode host %s: %w", lh.GetHostId(), err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE hot_hosts SET body = $2 WHERE host_id = $1`, lh.GetHostId(), b); err != nil {
		return fmt.Errorf("write host %s: %w", lh.GetHostId(), err)
	}
	return nil
}

// ListHosts returns the owner's hosts, oldest first.
func (h *Hosts) ListHosts(ctx context.Context, owner string) ([]*agentv1.LinkedHost, error) {
	rows, err := h.s.db.QueryContext(ctx, `SELECT host_id FROM hot_hosts WHERE owner = $1 ORDER BY create_time, host_id`, owner)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list hosts: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	return state.EachHost(ctx, ids, h.GetHost)
}

// RevokeHost removes the host, its token and its log, and wakes its links.
func (h *Hosts) RevokeHost(ctx context.Context, hostID string) error {
	err := h.s.write(ctx, func(tx *sql.Tx, _ int64) error {
		for _, q := range []string{
			`DELETE FROM hot_hosts WHERE host_id = $1`,
			`DELETE FROM hot_host_presence WHERE host_id = $1`,
			`DELETE FROM hot_host_calls WHERE log_key = $1`,
			`DELETE FROM hot_host_log_seqs WHERE log_key = $1`,
		} {
			if _, err := tx.ExecContext(ctx, q, hostID); err != nil {
				return fmt.Errorf("revoke host %s: %w", hostID, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.s.hostLogs.kick(hostID)
	return nil
}

// SetOnline records an open link, the host's live one from now on.
func (h *Hosts) SetOnline(ctx context.Context, hostID, connID string, ttl time.Duration) error {
	tookOver := false
	err := h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := storedHost(ctx, tx, hostID); err != nil {
			return err
		}
		prev, err := liveConn(ctx, tx, hostID, now)
		if err != nil {
			return err
		}
		tookOver = prev != "" && prev != connID
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_host_presence (host_id, conn_id, expires) VALUES ($1, $2, $3)`,
			hostID, connID, now+ttl.Nanoseconds()); err != nil {
			return fmt.Errorf("record host %s online: %w", hostID, err)
		}
		return setOfflineSince(ctx, tx, hostID, nil)
	})
	if err == nil && tookOver {
		h.s.hostLogs.kick(hostID)
	}
	return err
}

// RenewOnline extends a link's presence while it is the live one.
func (h *Hosts) RenewOnline(ctx context.Context, hostID, connID string, ttl time.Duration) error {
	return h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := storedHost(ctx, tx, hostID); err != nil {
			return err
		}
		prev, err := liveConn(ctx, tx, hostID, now)
		if err != nil {
			return err
		}
		if prev != "" && prev != connID {
			return state.ErrLeaseLost
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_host_presence (host_id, conn_id, expires) VALUES ($1, $2, $3)`,
			hostID, connID, now+ttl.Nanoseconds()); err != nil {
			return fmt.Errorf("renew host %s online: %w", hostID, err)
		}
		return nil
	})
}

// LinkConn answers the live link of a host.
func (h *Hosts) LinkConn(ctx context.Context, hostID string) (string, error) {
	return liveConn(ctx, h.s.db, hostID, h.s.now())
}

// liveConn reads the conn of the host's unexpired presence, "" for none.
func liveConn(ctx context.Context, q querier, hostID string, now int64) (string, error) {
	var conn string
	err := q.QueryRowContext(ctx, `SELECT conn_id FROM hot_host_presence WHERE host_id = $1 AND expires > $2`, hostID, now).Scan(&conn)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the link of host %s: %w", hostID, err)
	}
	return conn, nil
}

// SetOffline records a closed link unless a newer one is open.
func (h *Hosts) SetOffline(ctx context.Context, hostID, connID string) error {
	return h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM hot_host_presence WHERE host_id = $1 AND conn_id = $2`, hostID, connID)
		if err != nil {
			return fmt.Errorf("record host %s offline: %w", hostID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		return setOfflineSince(ctx, tx, hostID, timestamppb.New(time.Unix(0, now)))
	})
}

// setOfflineSince writes the stored host's offline time; a host that is
// gone is no error.
func setOfflineSince(ctx context.Context, tx *sql.Tx, hostID string, since *timestamppb.Timestamp) error {
	lh, err := storedHost(ctx, tx, hostID)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	lh.OfflineSince = since
	return putHost(ctx, tx, lh)
}
