package bench

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What the machine's cores did while the traced run waited: a stage that
// waits its turn on a saturated machine looks, in its spans, like work
// that got slow. The bench samples the CPU time of the mesh's process and
// its own (its clients and its vendor) every 5 ms while the
// traced level runs, from the scheduler's nanosecond counts of their
// threads.

// cpuEvery is how often the CPU times are sampled.
const cpuEvery = 5 * time.Millisecond

// WindowCPU is what the mesh's process and the bench's spent on a CPU
// during a stretch of the traced run, and what both kept busy.
type WindowCPU struct {
	MeshMs  float64 `json:"mesh_cpu_ms"`
	BenchMs float64 `json:"bench_cpu_ms"`
	// Cores is both processes' CPU time over the stretch's wall time;
	// MachineCores is every process's (Redis's, and whatever else runs on
	// the machine), from the kernel's count in 10 ms ticks.
	Cores        float64 `json:"cores_busy"`
	MachineCores float64 `json:"machine_cores_busy"`
}

type cpuSample struct {
	at                   time.Time
	mesh, bench, machine time.Duration
}

type cpuSampler struct {
	mu      sync.Mutex
	samples []cpuSample
	stop    chan struct{}
	done    chan struct{}
}

func startCPUSampler(meshPID int) *cpuSampler {
	s := &cpuSampler{stop: make(chan struct{}), done: make(chan struct{})}
	self := os.Getpid()
	go func() {
		defer close(s.done)
		t := time.NewTicker(cpuEvery)
		defer t.Stop()
		for {
			at := time.Now()
			sm := cpuSample{at: at, mesh: threadsCPU(meshPID), bench: threadsCPU(self), machine: machineCPU()}
			s.mu.Lock()
			s.samples = append(s.samples, sm)
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *cpuSampler) close() {
	close(s.stop)
	<-s.done
}

// between is the CPU spent from the last sample at or before from to the
// first at or after to.
func (s *cpuSampler) between(from, to time.Time) WindowCPU {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a, b *cpuSample
	for i := range s.samples {
		sm := &s.samples[i]
		if !sm.at.After(from) {
			a = sm
		}
		if b == nil && !sm.at.Before(to) {
			b = sm
		}
	}
	if a == nil || b == nil || !b.at.After(a.at) {
		return WindowCPU{}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	w := WindowCPU{MeshMs: ms(b.mesh - a.mesh), BenchMs: ms(b.bench - a.bench)}
	w.Cores = float64((b.mesh-a.mesh)+(b.bench-a.bench)) / float64(b.at.Sub(a.at))
	w.MachineCores = float64(b.machine-a.machine) / float64(b.at.Sub(a.at))
	return w
}

// machineCPU is the time every core spent busy so far, from the first line
// of /proc/stat (user, nice, system, idle, iowait, irq, softirq, steal, in
// ticks of 10 ms): all but idle and iowait.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:9] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// threadsCPU is a process's time on a CPU so far over all its threads, in
// nanoseconds, from each thread's schedstat (threads that ended are left
// out, which the Go runtime's long-lived threads make rare).
func threadsCPU(pid int) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				sum += time.Duration(ns)
			}
		}
	}
	return sum
}
