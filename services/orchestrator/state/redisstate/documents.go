package redisstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Documents is state.Documents on the store's Redis: one key per session,
// kept as long as the session's hot state.
type Documents struct{ s *Store }

// NewDocuments returns the documents kept in s's Redis.
func NewDocuments(s *Store) *Documents { return &Documents{s: s} }

var _ state.Documents = (*Documents)(nil)

func (d *Documents) key(sessionID string) string { return d.s.opts.Prefix + "doc:{" + sessionID + "}" }

// PutDocument implements state.Documents.
func (d *Documents) PutDocument(ctx context.Context, doc *agentv1.SessionDocument) error {
	b, err := proto.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode document: %w", err)
	}
	return d.s.rdb.Set(ctx, d.key(doc.GetSessionId()), b, d.s.opts.SessionTTL).Err()
}

// Document implements state.Documents.
func (d *Documents) Document(ctx context.Context, sessionID string) (*agentv1.SessionDocument, error) {
	b, err := d.s.rdb.Get(ctx, d.key(sessionID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var doc agentv1.SessionDocument
	if err := proto.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	return &doc, nil
}

// DeleteDocument implements state.Documents.
func (d *Documents) DeleteDocument(ctx context.Context, sessionID string) error {
	return d.s.rdb.Del(ctx, d.key(sessionID)).Err()
}
