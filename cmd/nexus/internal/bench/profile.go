package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// profileSeconds is how long a CPU profile of the mesh records from the
// start of its streams: longer than a level's turns take on a quiet
// machine, so that the profile covers the whole of the hot path.
const profileSeconds = 3

// profiler records one CPU profile of the mesh process, during the largest
// level, into a file named for its store; go tool pprof reads it.
type profiler struct {
	done chan error
}

// startProfile asks the mesh's internal listener for a CPU profile; wait
// returns when it is written.
func (m *mesh) startProfile(ctx context.Context, dir string) *profiler {
	p := &profiler{done: make(chan error, 1)}
	go func() { p.done <- m.profile(ctx, dir) }()
	return p
}

func (p *profiler) wait() error { return <-p.done }

func (m *mesh) profile(ctx context.Context, dir string) error {
	if m.metrics == "" {
		return fmt.Errorf("--profile: the processes of a deployment cannot be profiled from here")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metrics+"/debug/pprof/profile?seconds="+strconv.Itoa(profileSeconds), nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: profileSeconds*time.Second + time.Minute}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("--profile: read the mesh's CPU profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("--profile: read the mesh's CPU profile: %s: %s", resp.Status, b)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "cpu-"+m.store+".pprof"))
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("--profile: write %s: %w", f.Name(), err)
	}
	return f.Close()
}
