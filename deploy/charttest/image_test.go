package charttest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// finalStage is what the Dockerfile's last stage puts in the image: the
// binary's source and destination, the user and the entrypoint.
type finalStage struct {
	base, from, dest, user, entrypoint string
}

func readFinalStage(t *testing.T) finalStage {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var s finalStage
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "FROM":
			s = finalStage{base: f[1]}
		case "COPY":
			if len(f) == 4 && strings.HasPrefix(f[1], "--from=") {
				s.from, s.dest = f[2], f[3]
			}
		case "USER":
			s.user = f[1]
		case "ENTRYPOINT":
			m := regexp.MustCompile(`^\["([^"]+)"\]$`).FindStringSubmatch(strings.Join(f[1:], " "))
			if m != nil {
				s.entrypoint = m[1]
			}
		}
	}
	if !strings.HasPrefix(s.base, "gcr.io/distroless/static") || s.dest == "" || s.user == "" || s.entrypoint != s.dest {
		t.Fatalf("the Dockerfile's final stage is %+v; this test builds a distroless/static root filesystem with the binary at its entrypoint", s)
	}
	return s
}

// TestImageRootFilesystemAnswersReadyz builds what deploy/Dockerfile's image
// holds without a container engine: the binary built as its build stage
// builds it (static, -trimpath, stamped), in a root filesystem laid out as
// distroless/static's nonroot image (passwd, group, /tmp, the home, CA
// certificates, nothing else: no shell, no libc), then runs its entrypoint
// there as its user, `nexus dev --no-host`, until /readyz answers 200.
func TestImageRootFilesystemAnswersReadyz(t *testing.T) {
	stage := readFinalStage(t)
	rootfs := t.TempDir()
	for _, d := range []string{"etc/ssl/certs", "tmp", "home/nonroot"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(rootfs, "tmp"), 0o1777))
	must(os.WriteFile(filepath.Join(rootfs, "etc/passwd"), []byte("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), 0o644))
	must(os.WriteFile(filepath.Join(rootfs, "etc/group"), []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"), 0o644))
	if ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		must(os.WriteFile(filepath.Join(rootfs, "etc/ssl/certs/ca-certificates.crt"), ca, 0o644))
	}
	uid, gid, _ := strings.Cut(stage.user, ":")
	if os.Geteuid() == 0 {
		must(exec.Command("chown", "-R", stage.user, filepath.Join(rootfs, "home/nonroot")).Run())
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	bin := filepath.Join(rootfs, strings.TrimPrefix(stage.dest, "/"))
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/nexus")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the image's binary: %v\n%s", err, out)
	}
	if out, err := exec.Command("file", bin).Output(); err == nil && !strings.Contains(string(out), "statically linked") {
		t.Fatalf("the image's binary is not static (distroless/static has no libc): %s", out)
	}

	addr := freeAddr(t)
	env := []string{"HOME=/home/nonroot", "NEXUS_HTTP_ADDR=" + addr, "NEXUS_DATA_DIR=/home/nonroot/data", "NEXUS_LOG_FILE=/tmp/nexus.log",
		"NEXUS_ORCHESTRATOR_ADDR=" + freeAddr(t), "NEXUS_MODEL_ROUTER_ADDR=" + freeAddr(t), "NEXUS_CAPABILITY_ADDR=" + freeAddr(t), "NEXUS_HOST_ADDR=" + freeAddr(t)}
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "chroot", "--userspec="+uid+":"+gid, rootfs, stage.entrypoint, "dev", "--no-host")
	} else {
		// Without root, a user namespace gives the chroot (as its root).
		cmd = exec.CommandContext(ctx, "unshare", "--user", "--map-root-user", "chroot", rootfs, stage.entrypoint, "dev", "--no-host")
	}
	cmd.Env = env
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	must(cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	for {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(rootfs, "tmp/nexus.log"))
			t.Fatalf("nexus exited in the root filesystem: %v\n%s\n%s", err, out, log)
		case <-ctx.Done():
			t.Fatalf("/readyz never answered 200\n%s", out)
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("the image's root filesystem serves /readyz; %s", strings.TrimSpace(out.String()))
				return
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("nexus exited in the root filesystem: %v\n%s", err, out)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr())
}
