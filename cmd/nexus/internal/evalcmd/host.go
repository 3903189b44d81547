package evalcmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"nexus.local/cmd/nexus/internal/cli"
	tasks "nexus.local/eval"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/revit"
)

// Host is the seam between a task and the document it works on: the
// setup and the checker run on it, and the run's tool calls are carried to
// it. Today the command carries each call to a runtime over its local HTTP
// contract, as nexus run does; a runtime on the host link would answer the
// same three questions.
type Host interface {
	// Execute runs a setup or a checker outside any run.
	Execute(ctx context.Context, req *hostv1.ExecuteRequest) (*hostv1.HostResult, error)
	// Carry delivers a run's tool call and answers the host's result, or
	// the courier failure to post instead when no host saw it.
	Carry(ctx context.Context, call *agentv1.ToolCall) (*hostv1.HostResult, *agentv1.CourierFailure)
	// App is the application the host serves, e.g. "freecad".
	App() string
}

// localHost carries calls to a runtime over its local HTTP contract.
type localHost struct {
	h   *cli.Host
	app string
}

// dialHost pairs with the runtime at url.
func dialHost(ctx context.Context, url, token string, client *http.Client) (*localHost, error) {
	h := &cli.Host{URL: url, Token: token, HTTP: client}
	info, err := h.Info(ctx)
	if err != nil {
		return nil, err
	}
	return &localHost{h: h, app: info.GetHostApp()}, nil
}

func (l *localHost) App() string { return l.app }

func (l *localHost) Carry(ctx context.Context, call *agentv1.ToolCall) (*hostv1.HostResult, *agentv1.CourierFailure) {
	return l.h.Carry(ctx, l.app, call)
}

func (l *localHost) Execute(ctx context.Context, req *hostv1.ExecuteRequest) (*hostv1.HostResult, error) {
	res, failure := l.h.Carry(ctx, l.app, &agentv1.ToolCall{HostRequest: &agentv1.ToolCall_Execute{Execute: req}})
	if failure != nil {
		return nil, errors.New(failure.GetMessage())
	}
	return res, nil
}

// finalView renders the document as the run left it, for the report; a
// view that cannot be rendered leaves the report without one.
func finalView(ctx context.Context, h Host) []byte {
	res, failure := h.Carry(ctx, &agentv1.ToolCall{HostRequest: &agentv1.ToolCall_ExportView{ExportView: &hostv1.ExportViewRequest{View: "isometric", MaxPx: 480}}})
	if failure != nil || len(res.GetImages()) == 0 {
		return nil
	}
	return res.GetImages()[0].GetData()
}

// Hosts are the runtimes tasks run on, one task at a time each, by the
// application they serve.
type Hosts struct {
	free  map[string]chan Host
	size  int
	stops []func() error
}

// ConnectHosts pairs with the one runtime at url; tasks of another
// application are not run on it.
func ConnectHosts(ctx context.Context, url, token string, client *http.Client) (*Hosts, error) {
	h, err := dialHost(ctx, url, token, client)
	if err != nil {
		return nil, err
	}
	hs := &Hosts{free: map[string]chan Host{h.App(): make(chan Host, 1)}, size: 1}
	hs.free[h.App()] <- h
	return hs, nil
}

// StartHosts starts n runtimes of the command's own for each application
// the tasks run in (headless FreeCAD; the Revit add-in's runtime on the
// Revit double, Revit itself being out of a command's reach), so tasks can
// run side by side, each on its own document.
func StartHosts(ctx context.Context, n int, client *http.Client, ts []tasks.Task) (*Hosts, error) {
	hs := &Hosts{free: map[string]chan Host{}, size: n}
	for _, t := range ts {
		app := t.Host.String()
		if hs.free[app] != nil {
			continue
		}
		hs.free[app] = make(chan Host, n)
		for i := range n {
			url, token, stop, err := startRuntime(ctx, t.Host)
			if err != nil {
				_ = hs.Close()
				return nil, fmt.Errorf("start %s runtime %d of %d: %w", app, i+1, n, err)
			}
			hs.stops = append(hs.stops, stop)
			h, err := dialHost(ctx, url, token, client)
			if err != nil {
				_ = hs.Close()
				return nil, err
			}
			hs.free[app] <- h
		}
	}
	return hs, nil
}

// startRuntime starts one runtime of host and answers how to reach and stop it.
func startRuntime(ctx context.Context, host tasks.Host) (string, string, func() error, error) {
	if host == tasks.HostRevit {
		p, err := revit.Start(ctx, revit.Options{Addr: "127.0.0.1:0"})
		if err != nil {
			return "", "", nil, err
		}
		return p.URL, p.Token, func() error { p.Stop(); return nil }, nil
	}
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		return "", "", nil, err
	}
	return rt.URL(), rt.Token(), rt.Stop, nil
}

// Size is how many tasks of one application can run at once.
func (hs *Hosts) Size() int { return hs.size }

// take waits for a free runtime of the task's application.
func (hs *Hosts) take(ctx context.Context, t tasks.Task) (Host, error) {
	free := hs.free[t.Host.String()]
	if free == nil {
		var apps []string
		for app := range hs.free {
			apps = append(apps, app)
		}
		return nil, fmt.Errorf("%s is a %s task and the runtimes serve %v", t.ID, t.Host, apps)
	}
	select {
	case h := <-free:
		return h, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (hs *Hosts) give(h Host) { hs.free[h.App()] <- h }

// Close stops the runtimes the command started.
func (hs *Hosts) Close() error {
	var errs []error
	for _, stop := range hs.stops {
		errs = append(errs, stop())
	}
	return errors.Join(errs...)
}
