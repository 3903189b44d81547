package redisstate_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
)

// topologyDeadline bounds each wait for a private server or cluster to come
// up; generous, because the machine may be loaded.
const topologyDeadline = 2 * time.Minute

// TestTopologiesFromURL starts each topology NEXUS_REDIS_URL can name on
// private redis-server processes (one server; a master watched by a
// sentinel; a three-node cluster), builds the client from the URL form, shows
// which topology it is talking to, and runs a round trip through the store.
func TestTopologiesFromURL(t *testing.T) {
	tests := []struct {
		name string
		// start starts the servers and returns the URL and a check that the
		// client talks to what the URL names.
		start func(t *testing.T) (string, func(context.Context, redis.UniversalClient) error)
	}{
		{"single server", startSingle},
		{"sentinel", startSentinel},
		{"cluster", startCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*topologyDeadline)
			defer cancel()
			url, check := tt.start(t)

			c, err := redisstate.NewClient(url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := check(ctx, c); err != nil {
				t.Fatalf("client from %s: %v", url, err)
			}

			s := openTest(t, url, redisstate.Options{Prefix: "topology:"})
			defer s.Close()
			if err := check(ctx, s.Client()); err != nil {
				t.Fatalf("store's client from %s: %v", url, err)
			}
			roundTrip(t, ctx, s)
		})
	}
}

// startSingle starts one server; the client must be a plain one, and the
// server must be one that is not part of a cluster.
func startSingle(t *testing.T) (string, func(context.Context, redis.UniversalClient) error) {
	port := startRedisServer(t)
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), func(ctx context.Context, c redis.UniversalClient) error {
		if _, ok := c.(*redis.Client); !ok {
			return fmt.Errorf("client is %T, want *redis.Client", c)
		}
		if err := c.ClusterInfo(ctx).Err(); err == nil || !strings.Contains(err.Error(), "cluster support disabled") {
			return fmt.Errorf("CLUSTER INFO answered %v, want cluster support disabled", err)
		}
		return servedBy(ctx, c, port)
	}
}

// startSentinel starts a master and a sentinel that watches it under the
// name nexus; the URL names only the sentinel, so a client that reaches the
// master found it through the sentinel.
func startSentinel(t *testing.T) (string, func(context.Context, redis.UniversalClient) error) {
	master := startRedisServer(t)
	dir := t.TempDir()
	port := freePort(t, false)
	conf := filepath.Join(dir, "sentinel.conf")
	// A sentinel rewrites its configuration file, so it gets one of its own.
	err := os.WriteFile(conf, fmt.Appendf(nil, "port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor nexus 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds nexus 60000\n", port, dir, master), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, port, redisBin(t, "redis-server"), conf, "--sentinel")
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	t.Cleanup(func() { _ = sentinel.Close() })
	return fmt.Sprintf("redis://127.0.0.1:%d/0?master_name=nexus", port), func(ctx context.Context, c redis.UniversalClient) error {
		if _, ok := c.(*redis.Client); !ok {
			return fmt.Errorf("client is %T, want the failover *redis.Client", c)
		}
		addr, err := sentinel.GetMasterAddrByName(ctx, "nexus").Result()
		if err != nil {
			return fmt.Errorf("ask the sentinel for nexus: %w", err)
		}
		if want := []string{"127.0.0.1", strconv.Itoa(master)}; !slices.Equal(addr, want) {
			return fmt.Errorf("the sentinel names master %v, want %v", addr, want)
		}
		role, err := c.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return fmt.Errorf("ROLE answered %v (%v), want master", role, err)
		}
		return servedBy(ctx, c, master)
	}
}

// startCluster starts three cluster-enabled servers and joins them into one
// cluster of three masters; the URL names all three as seeds.
func startCluster(t *testing.T) (string, func(context.Context, redis.UniversalClient) error) {
	var ports []int
	var addrs []string
	for range 3 {
		p := startRedisServer(t, "--cluster-enabled", "yes", "--cluster-node-timeout", "60000")
		ports = append(ports, p)
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	cmd := exec.Command(redisBin(t, "redis-cli"), append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "0", "--cluster-yes")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Every node must see the whole cluster before a client can rely on
	// any one's view of the slots.
	for _, p := range ports {
		c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
		poll(t, fmt.Sprintf("cluster node %d ready", p), func() bool {
			info, err := c.ClusterInfo(t.Context()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3")
		})
		_ = c.Close()
	}
	url := fmt.Sprintf("redis://%s?addr=%s&addr=%s", addrs[0], addrs[1], addrs[2])
	return url, func(ctx context.Context, c redis.UniversalClient) error {
		cc, ok := c.(*redis.ClusterClient)
		if !ok {
			return fmt.Errorf("client is %T, want *redis.ClusterClient", c)
		}
		info, err := cc.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
			return fmt.Errorf("CLUSTER INFO answered %q (%v), want a healthy cluster of 3 nodes", info, err)
		}
		// ForEachMaster visits the masters concurrently.
		var mu sync.Mutex
		masters := map[string]bool{}
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			port, err := serverPort(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			masters[port] = true
			return err
		})
		if err != nil {
			return fmt.Errorf("visit the masters: %w", err)
		}
		for _, p := range ports {
			if !masters[strconv.Itoa(p)] {
				return fmt.Errorf("the client's masters are %v, want all of %v", masters, ports)
			}
		}
		return nil
	}
}

// roundTrip writes sessions and a tool result through the store and reads
// them back. In a cluster the sessions' keys fall in different slots, so at
// least two masters hold some: the store really spread its keys.
func roundTrip(t *testing.T, ctx context.Context, s *redisstate.Store) {
	t.Helper()
	const sessions = 20
	for i := range sessions {
		id := fmt.Sprintf("session-%d", i)
		if err := s.Create(ctx, &agentv1.Session{SessionId: id, Owner: "ada", HostApp: "freecad", CreateTime: timestamppb.Now()}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	got, err := s.Get(ctx, "session-7")
	if err != nil || got.GetOwner() != "ada" || got.GetHostApp() != "freecad" {
		t.Fatalf("get session-7: %v %v", got, err)
	}
	list, err := s.List(ctx, "ada")
	if err != nil || len(list) != sessions {
		t.Fatalf("list: %d sessions (%v), want %d", len(list), err, sessions)
	}
	if err := s.Expect(ctx, "session-3", "call-1", "token-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliver(ctx, "session-3", "call-1", "token-1", state.Delivery{Content: state.ResultDelivery(&hostv1.HostResult{Stdout: "done"})}); err != nil {
		t.Fatal(err)
	}
	d, ok, err := s.Decide(ctx, "session-3", "call-1")
	if err != nil || !ok || d.Content.GetResult().GetStdout() != "done" {
		t.Fatalf("decide: %v %v %v, want the delivered result", d, ok, err)
	}

	// A batch's steps touch keys of several slots: the session's, the
	// run's and the schedule's.
	if err := s.Deliver(ctx, "session-3", "call-1", "token-1", state.Delivery{Content: state.ResultDelivery(&hostv1.HostResult{Stdout: "done"})}); err != nil {
		t.Fatal(err)
	}
	saved := &state.SaveRunStep{Run: &orchestratorv1.RunState{RunId: "run-3", SessionId: "session-3", Turns: 2}}
	read := &state.GetRunStep{RunID: "run-3"}
	sess := &state.GetSessionStep{SessionID: "session-3"}
	peek := &state.PeekStep{SessionID: "session-3", CallID: "call-1"}
	if err := s.Batch(ctx, saved, read, sess, peek); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if read.Run.GetTurns() != 2 || sess.Session.GetOwner() != "ada" || !peek.OK {
		t.Fatalf("batch read run %v, session %v, mailbox ok=%v", read.Run, sess.Session, peek.OK)
	}

	cc, ok := s.Client().(*redis.ClusterClient)
	if !ok {
		return
	}
	var mu sync.Mutex
	holding := 0
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		mu.Lock()
		defer mu.Unlock()
		if n > 0 {
			holding++
		}
		return err
	})
	if err != nil || holding < 2 {
		t.Fatalf("%d masters hold keys (%v), want the store's keys spread over at least 2", holding, err)
	}
}

// servedBy checks that the client's commands reach the server on port.
func servedBy(ctx context.Context, c redis.UniversalClient, port int) error {
	got, err := serverPort(ctx, c)
	if err != nil {
		return err
	}
	if got != strconv.Itoa(port) {
		return fmt.Errorf("commands reach the server on port %s, want %d", got, port)
	}
	return nil
}

// serverPort is the port of the server that answers the client's INFO.
func serverPort(ctx context.Context, c redis.Cmdable) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("info server: %w", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("info server names no tcp_port:\n%s", info)
}

// startRedisServer starts a redis-server with no persistence on a free
// loopback port (its cluster bus port free too) in a directory of its own.
func startRedisServer(t *testing.T, extra ...string) int {
	t.Helper()
	port := freePort(t, true)
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", t.TempDir(),
		"--save", "", "--appendonly", "no"}, extra...)
	startProcess(t, port, redisBin(t, "redis-server"), args...)
	return port
}

// startProcess runs a server that listens on port, waits until it answers
// PING, and kills it when the test ends.
func startProcess(t *testing.T, port int, bin string, args ...string) {
	t.Helper()
	var log bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MaxRetries: -1})
	defer c.Close()
	poll(t, fmt.Sprintf("%s %s answers PING", filepath.Base(bin), strings.Join(args, " ")), func() bool {
		select {
		case <-exited:
			t.Fatalf("%s exited during start:\n%s", bin, log.String())
		default:
		}
		return c.Ping(t.Context()).Err() == nil
	})
}

// poll waits until cond holds, failing the test after topologyDeadline.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(topologyDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, topologyDeadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort finds a free loopback port; with bus, one whose cluster bus port
// (the port plus 10000) is free as well.
func freePort(t *testing.T, bus bool) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !bus {
			l.Close()
			return port
		}
		if port+10000 <= 65535 {
			if b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000))); err == nil {
				b.Close()
				l.Close()
				return port
			}
		}
		l.Close()
	}
	t.Fatal("no free port with a free cluster bus port")
	return 0
}

// redisBin finds a Redis program; make test installs them (redis-server).
func redisBin(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (make deps installs redis-server): %v", name, err)
	}
	return bin
}
