// Package redistest runs a real Redis, Debian's redis-server, for tests:
// the store that gateway replicas share their rate limits in. Only tests
// import it.
//
// [Start] runs redis-server as a child process of the test, on a free
// loopback port, with no persistence (--save "" --appendonly no), and
// kills it when the test ends:
//
//	r := redistest.Start(t)
//	url := r.URL()     // redis://127.0.0.1:PORT/0
//	r.Stop(t)          // killed, as a crash would
//	r.Restart(t)       // again on the same port, empty
//
// The binary is redis-server on PATH, or /usr/bin/redis-server (`apt-get
// install redis-server`). Where it is missing, a test that calls Start
// skips, saying so; with SWITCHBOARD_REDIS=require (as in CI) it fails
// instead.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// RequireEnv is the environment variable that, set to "require" (as CI
// sets it), turns a missing redis-server from a skipped test into a failed
// one.
const RequireEnv = "SWITCHBOARD_REDIS"

const (
	// readyTimeout bounds how long [Start] waits for redis-server to say
	// it is ready; it takes milliseconds.
	readyTimeout = 30 * time.Second

	// startAttempts is how many times [Start] starts redis-server on a new
	// port when the port it picked was taken before it bound it.
	startAttempts = 5

	// maxOutput bounds how much of redis-server's output is kept, to show
	// when it fails.
	maxOutput = 64 << 10
)

// Redis is a running redis-server, started by [Start] and killed when the
// test that started it ends. Its methods report failures with t.Fatal, so
// they are for the test's goroutine.
type Redis struct {
	bin  string
	port string

	mu  sync.Mutex
	cmd *exec.Cmd     // nil while stopped
	out *mcptest.Tail // its output
	end chan struct{} // closed when cmd has exited
}

// Start runs redis-server for t and returns it ready to accept
// connections. Where the binary is missing, Start skips t, or fails it if
// SWITCHBOARD_REDIS=require.
func Start(t testing.TB) *Redis {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		msg := fmt.Sprintf("redistest: %v: install it with `apt-get install redis-server`", err)
		if os.Getenv(RequireEnv) == "require" {
			t.Fatalf("%s; %s=require, so the tests that need it fail", msg, RequireEnv)
		}
		t.Skipf("%s; skipping (%s=require makes this a failure)", msg, RequireEnv)
		return nil
	}
	r := &Redis{bin: bin}
	t.Cleanup(r.kill)
	for attempt := 1; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: picking a port: %v", err)
		}
		_, r.port, _ = net.SplitHostPort(l.Addr().String())
		l.Close()
		err = r.start()
		if err == nil {
			return r
		}
		if !errors.Is(err, errAddrInUse) || attempt == startAttempts {
			t.Fatalf("redistest: %v", err)
		}
	}
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + r.port }

// URL is the server's URL, database 0.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Stop kills the server, as a crash would, and waits for it to exit.
func (r *Redis) Stop(t testing.TB) {
	t.Helper()
	r.kill()
}

// Restart starts the server again, on the same port, with no data, and
// waits until it accepts connections.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	r.kill()
	if err := r.start(); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
}

// errAddrInUse says that the port picked was taken before redis-server
// bound it.
var errAddrInUse = errors.New("the port picked for redis-server was taken")

// start runs redis-server on r.port and waits for its line saying it is
// ready.
func (r *Redis) start() error {
	cmd := exec.Command(r.bin, "--port", r.port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "yes", "--loglevel", "notice")
	cmd.Env = []string{}
	dieWithTheTests(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	out := &mcptest.Tail{Max: maxOutput}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", r.bin, err)
	}
	ready := make(chan struct{})
	end := make(chan struct{})
	go func() {
		defer close(end)
		s := bufio.NewScanner(stdout)
		signalled := false
		for s.Scan() {
			fmt.Fprintln(out, s.Text())
			if !signalled && strings.Contains(s.Text(), "Ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	r.mu.Lock()
	r.cmd, r.out, r.end = cmd, out, end
	r.mu.Unlock()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case <-end:
		r.mu.Lock()
		r.cmd = nil
		r.mu.Unlock()
		if strings.Contains(out.String(), "Address already in use") {
			return fmt.Errorf("%w: %s", errAddrInUse, r.port)
		}
		return fmt.Errorf("redis-server exited before it was ready; its output:\n%s", out.String())
	case <-timer.C:
		r.kill()
		return fmt.Errorf("redis-server was not ready within %v (readyTimeout); its output:\n%s", readyTimeout, out.String())
	}
}

// kill kills the server, if it runs, and waits for it to exit.
func (r *Redis) kill() {
	r.mu.Lock()
	cmd, end := r.cmd, r.end
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-end
}

// findBinary returns the path of redis-server: on PATH, else in /usr/bin
// (where Debian puts it, which a test's PATH may lack).
func findBinary() (string, error) {
	if path, err := exec.LookPath("redis-server"); err == nil {
		return path, nil
	}
	const debian = "/usr/bin/redis-server"
	if _, err := os.Stat(debian); err == nil {
		return debian, nil
	}
	return "", errors.New("no redis-server on PATH or at " + debian)
}
