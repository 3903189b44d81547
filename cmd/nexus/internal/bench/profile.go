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

// profileSeconds is how long each of a level's CPU profiles records. A
// level lasts as long as its slowest stream, which nobody knows beforehand,
// so the profiler records one short profile after another until the level
// ends; go tool pprof merges the files it is given.
const profileSeconds = 1

// profiler records CPU profiles of the mesh process during one level, into
// files named for its store and numbered (cpu-<store>-<n>.pprof), and the
// process's allocations before and after the level
// (allocs-<store>-before.pprof, allocs-<store>-after.pprof).
type profiler struct {
	stopped chan struct{}
	done    chan error
}

// startProfile starts recording; stop ends it after the profile under way.
func (m *mesh) startProfile(ctx context.Context, dir string) *profiler {
	p := &profiler{stopped: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		if err := m.profile(ctx, "allocs", filepath.Join(dir, fmt.Sprintf("allocs-%s-before.pprof", m.store))); err != nil {
			p.done <- err
			return
		}
		for i := 1; ; i++ {
			if err := m.profile(ctx, "profile?seconds="+strconv.Itoa(profileSeconds), filepath.Join(dir, fmt.Sprintf("cpu-%s-%d.pprof", m.store, i))); err != nil {
				p.done <- err
				return
			}
			select {
			case <-p.stopped:
				p.done <- m.profile(ctx, "allocs", filepath.Join(dir, fmt.Sprintf("allocs-%s-after.pprof", m.store)))
				return
			default:
			}
		}
	}()
	return p
}

func (p *profiler) stop() error {
	close(p.stopped)
	return <-p.done
}

// profile saves one of the mesh's /debug/pprof/ profiles: which names the
// profile and its query, such as "allocs" (every allocation since the
// process started; two of them, taken before and after a level, give the
// level's own with pprof's -base) or "profile?seconds=1" (CPU).
func (m *mesh) profile(ctx context.Context, which, file string) error {
	if m.metrics == "" {
		return fmt.Errorf("--profile: the processes of a deployment cannot be profiled from here")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metrics+"/debug/pprof/"+which, nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: profileSeconds*time.Second + time.Minute}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("--profile: read the mesh's profile %s: %w", which, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("--profile: read the mesh's profile %s: %s: %s", which, resp.Status, b)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("--profile: write %s: %w", f.Name(), err)
	}
	return f.Close()
}
