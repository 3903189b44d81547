package orchestrator

import (
	"context"
	"sync"
	"time"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
)

// peerCacheTTL is how long the model catalog and each host's guidance are
// reused. A run is carried on step by step, often on another replica, and
// asking both peers again at every step would sit on every tool result's
// path; both change only when a peer is redeployed.
const peerCacheTTL = 30 * time.Second

// peerCache keeps the answers of the two peer calls every run step needs.
type peerCache struct {
	now func() time.Time

	mu       sync.Mutex
	catalog  *modelv1.ListModelsResponse
	catAt    time.Time
	guidance map[string]cachedGuidance
}

type cachedGuidance struct {
	g  *capabilityv1.GetGuidanceResponse
	at time.Time
}

// listModels returns the router's catalog, asking at most once per TTL.
func (s *Service) listModels(ctx context.Context) (*modelv1.ListModelsResponse, error) {
	c := &s.peers
	c.mu.Lock()
	cat, fresh := c.catalog, c.catalog != nil && c.now().Sub(c.catAt) < peerCacheTTL
	c.mu.Unlock()
	if fresh {
		return cat, nil
	}
	cat, err := s.router.ListModels(ctx, &modelv1.ListModelsRequest{})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.catalog, c.catAt = cat, c.now()
	c.mu.Unlock()
	return cat, nil
}

// guidance returns the capability service's guidance for host, asking at
// most once per TTL.
func (s *Service) guidance(ctx context.Context, host string) (*capabilityv1.GetGuidanceResponse, error) {
	c := &s.peers
	c.mu.Lock()
	if e, ok := c.guidance[host]; ok && c.now().Sub(e.at) < peerCacheTTL {
		c.mu.Unlock()
		return e.g, nil
	}
	c.mu.Unlock()
	g, err := s.capability.GetGuidance(ctx, &capabilityv1.GetGuidanceRequest{HostApp: host})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.guidance == nil {
		c.guidance = map[string]cachedGuidance{}
	}
	c.guidance[host] = cachedGuidance{g: g, at: c.now()}
	c.mu.Unlock()
	return g, nil
}
