package orchestrator

import (
	"context"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/identity"
	"nexus.local/services/orchestrator/state"
)

// What the peers list: the audit log, the model catalog and the hosts.

// ListDispatches returns the audit log of the caller's session.
func (s *Service) ListDispatches(ctx context.Context, req *agentv1.ListDispatchesRequest) (*agentv1.ListDispatchesResponse, error) {
	if err := s.ownedHistory(ctx, req.GetSessionId()); err != nil {
		return nil, err
	}
	resp, err := s.capability.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: req.GetSessionId(), IncludeCode: req.GetIncludeCode(),
		PageSize: req.GetPageSize(), PageToken: req.GetPageToken()})
	if err != nil {
		return nil, peerStatus(err, "list dispatches from the capability service")
	}
	return &agentv1.ListDispatchesResponse{Dispatches: resp.GetDispatches(), NextPageToken: resp.GetNextPageToken()}, nil
}

// ListModels answers with the router's catalog.
func (s *Service) ListModels(ctx context.Context, _ *agentv1.ListModelsRequest) (*agentv1.ListModelsResponse, error) {
	resp, err := s.router.ListModels(ctx, &modelv1.ListModelsRequest{})
	if err != nil {
		return nil, peerStatus(err, "list models from the model-router")
	}
	out := &agentv1.ListModelsResponse{DefaultModel: resp.GetDefaultModel()}
	for _, m := range resp.GetModels() {
		out.Models = append(out.Models, publicModel(m))
	}
	return out, nil
}

// ListHosts answers with the registered host providers.
func (s *Service) ListHosts(ctx context.Context, _ *agentv1.ListHostsRequest) (*agentv1.ListHostsResponse, error) {
	resp, err := s.capability.ListHosts(ctx, &capabilityv1.ListHostsRequest{})
	if err != nil {
		return nil, peerStatus(err, "list hosts from the capability service")
	}
	out := &agentv1.ListHostsResponse{}
	for _, h := range resp.GetHosts() {
		out.Hosts = append(out.Hosts, publicHost(h))
	}
	if out.LinkedHosts, err = s.hosts.ListHosts(ctx, identity.FromIncoming(ctx)); err != nil {
		return nil, state.Status(err, "list linked hosts")
	}
	return out, nil
}
