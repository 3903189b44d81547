package cli

import (
	"context"
	"fmt"
	"net/http"
	"text/tabwriter"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// hostsBackend is what the hosts commands need of a backend.
type hostsBackend interface {
	ApprovePairing(ctx context.Context, req *agentv1.ApprovePairingRequest) (*agentv1.LinkedHost, error)
	ListHosts(ctx context.Context, req *agentv1.ListHostsRequest) (*agentv1.ListHostsResponse, error)
}

func (b *grpcBackend) links() agentv1.HostLinkServiceClient {
	return agentv1.NewHostLinkServiceClient(b.conn)
}

func (b *grpcBackend) ApprovePairing(ctx context.Context, req *agentv1.ApprovePairingRequest) (*agentv1.LinkedHost, error) {
	r, err := b.links().ApprovePairing(ctx, req)
	return r, b.wrap("approve the pairing", err)
}

func (b *grpcBackend) ListHosts(ctx context.Context, req *agentv1.ListHostsRequest) (*agentv1.ListHostsResponse, error) {
	r, err := b.c.ListHosts(ctx, req)
	return r, b.wrap("list hosts", err)
}

func (b *gatewayBackend) ApprovePairing(ctx context.Context, req *agentv1.ApprovePairingRequest) (*agentv1.LinkedHost, error) {
	var r agentv1.LinkedHost
	return &r, b.unary(ctx, "approve the pairing", http.MethodPost, "/v1/host-pairings:approve", req, &r)
}

func (b *gatewayBackend) ListHosts(ctx context.Context, _ *agentv1.ListHostsRequest) (*agentv1.ListHostsResponse, error) {
	var r agentv1.ListHostsResponse
	return &r, b.unary(ctx, "list hosts", http.MethodGet, "/v1/hosts", nil, &r)
}

// HostsOptions configures the hosts commands.
type HostsOptions struct {
	Conn   Conn
	Output Output
}

// ApproveHost is `nexus hosts approve CODE`: the runtime that printed CODE
// becomes one of the caller's linked hosts.
func ApproveHost(ctx context.Context, opt HostsOptions, code string, o IO) error {
	b, err := connect(ctx, opt.Conn, o)
	if err != nil {
		return err
	}
	defer b.Close()
	h, err := b.(hostsBackend).ApprovePairing(ctx, &agentv1.ApprovePairingRequest{UserCode: code})
	if err != nil {
		return err
	}
	if opt.Output == OutputJSON {
		return writeJSON(o.Stdout, h)
	}
	fmt.Fprintf(o.Stdout, "linked %s host %s (%s); it carries the calls of your %s sessions from now on\n", h.GetHostApp(), h.GetHostId(), h.GetDocument(), h.GetHostApp())
	return nil
}

// Hosts is `nexus hosts`: the caller's linked hosts, online or not.
func Hosts(ctx context.Context, opt HostsOptions, o IO) error {
	b, err := connect(ctx, opt.Conn, o)
	if err != nil {
		return err
	}
	defer b.Close()
	resp, err := b.(hostsBackend).ListHosts(ctx, &agentv1.ListHostsRequest{})
	if err != nil {
		return err
	}
	if opt.Output == OutputJSON {
		return writeJSON(o.Stdout, &agentv1.ListHostsResponse{LinkedHosts: resp.GetLinkedHosts()})
	}
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tAPP\tDOCUMENT\tSTATE")
	for _, h := range resp.GetLinkedHosts() {
		state := "online"
		if !h.GetOnline() {
			state = "offline"
			if s := h.GetOfflineSince(); s != nil {
				state += " since " + s.AsTime().Local().Format(time.DateTime)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.GetHostId(), h.GetHostApp(), h.GetDocument(), state)
	}
	return tw.Flush()
}
