package upstream

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestStdioConnectAndCall(t *testing.T) {
	u := New(stdio("kid", mcptest.Script{}), nil)
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	res, err := callTool(t.Context(), u, "add", map[string]any{"a": 2, "b": 3})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if got := mcptest.Text(res); got != "5" {
		t.Errorf("add(2, 3) = %q, want 5", got)
	}
	if got := u.Snapshot().ProtocolVersion; got != legacyProtocolVersion {
		t.Errorf("stdio protocol version = %q, want the legacy handshake %q", got, legacyProtocolVersion)
	}
}

func TestStdioCommandNotFound(t *testing.T) {
	u := New(config.Server{Name: "ghost", Command: "switchboard-no-such-command"}, nil)
	defer u.Close(time.Time{})
	err := u.Connect(t.Context())
	want := `server "ghost": connect: command "switchboard-no-such-command" not found`
	if err == nil || err.Error() != want {
		t.Fatalf("Connect = %v, want %q", err, want)
	}
}

func TestStdioCrashReportsExitAndStderr(t *testing.T) {
	u := New(shell("crash", "echo 'fatal: no config' >&2; exit 3"), nil)
	defer u.Close(time.Time{})
	err := u.Connect(t.Context())
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	for _, want := range []string{`server "crash": connect:`, "process exited with status 3", "stderr: fatal: no config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestStdioUsageKeepsTheCause: a server that needs a token and has none
// says so on its first line, prints 55 lines of usage and exits. Its error
// carries that first line, then the last lines.
func TestStdioUsageKeepsTheCause(t *testing.T) {
	text, err := filepath.Abs("testdata/usage.txt")
	if err != nil {
		t.Fatal(err)
	}
	u := New(shell("gh", `cat "$1" >&2; exit 1`, text), nil)
	defer u.Close(time.Time{})
	err = u.Connect(t.Context())
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	for _, err := range []error{err, u.Snapshot().Err} {
		if msg := err.Error(); !strings.Contains(msg, "process exited with status 1") || !strings.HasSuffix(msg, stderrMark+usageKept(t)) {
			t.Errorf("error:\n%s\nwant the exit, and the stderr kept:\n%s", msg, usageKept(t))
		}
	}
}

// TestStdioTimeoutCarriesStderr: a server that writes to stderr and then
// never answers, in the handshake or in the first list of tools, fails
// with the step, how long it waited, and what it wrote.
func TestStdioTimeoutCarriesStderr(t *testing.T) {
	// Shells, which start at once however busy the machine: the stderr
	// is written long before the timeout, and the step is the one meant.
	hang := shell("hang", `echo 'Error: GITHUB_TOKEN not set' >&2; echo 'waiting for a token' >&2; while read -r _; do :; done`)
	hang.Timeout = ms(1000)
	list := shell("list", answersInitialize+`echo 'Error: the index is still loading' >&2; while read -r _; do :; done`)
	list.Timeout = ms(1000)
	for _, tc := range []struct {
		srv  config.Server
		want string
	}{
		{hang, `server "hang": connect: initialize: timed out after 1s; stderr: Error: GITHUB_TOKEN not set | waiting for a token`},
		{list, `server "list": list tools: timed out after 1s; stderr: Error: the index is still loading`},
	} {
		t.Run(tc.srv.Name, func(t *testing.T) {
			u := New(tc.srv, nil)
			defer u.Close(time.Time{})
			err := u.Connect(t.Context())
			if !errors.Is(err, ErrTimeout) || err.Error() != tc.want {
				t.Errorf("Connect = %v, want %s", err, tc.want)
			}
			if got := u.Snapshot().Err; got == nil || got.Error() != tc.want {
				t.Errorf("the status's error = %v, want %s", got, tc.want)
			}
		})
	}
}

func TestStdioProcessExitIsSeen(t *testing.T) {
	state := t.TempDir()
	var log eventLog
	u := New(stdio("quitter", mcptest.Script{ExitOnCall: 1, StateDir: state}), &Options{OnEvent: log.add})
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Every process exits on its first call, so the call fails even after
	// its one replay; each exit is seen and a new process started.
	if _, err := callTool(t.Context(), u, "echo", nil); err == nil {
		t.Fatal("call succeeded, want the process to exit")
	}
	u.Close(time.Time{}) // every event is delivered by then
	errs := log.errs(Reconnecting)
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "process exited with status 0") {
		t.Errorf("reconnecting causes = %v, want the process's exit", errs)
	}
	counts, err := mcptest.ReadCounts(state)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Starts < 2 {
		t.Errorf("%d process starts, want a restart after the exit", counts.Starts)
	}
}

// TestStdioCrashMidCallIsAmbiguous: a child process that dies after it
// ran a call, before it answered, leaves the call ambiguous: a tool that is
// not idempotent is not replayed, and one that is, is. Behind a wrapper
// whose grandchild keeps stdout open (as npx leaves one), the session is
// ended by the child's exit, not by EOF: the read that the close
// interrupts is not a failed write, and the call may still have run.
func TestStdioCrashMidCallIsAmbiguous(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wrapped  bool // behind a shell whose grandchild holds stdout
		tool     string
		wantErr  error // nil: any error after the one replay
		wantRuns int   // for a read-only tool: at least
	}{
		{"not idempotent", false, "increment", ErrAmbiguous, 1},
		{"not idempotent, stdout held open", true, "increment", ErrAmbiguous, 1},
		{"read-only: replayed once", false, "echo", nil, 2},
		{"read-only, stdout held open: replayed once", true, "echo", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			srv := stdio("crasher", mcptest.Script{CrashAfterCall: 1, StateDir: state})
			if tc.wrapped {
				wrapper := shell("crasher", `sleep 300 & exec "$@"`, append([]string{srv.Command}, srv.Args...)...)
				wrapper.Env = srv.Env
				srv = wrapper
			}
			u := New(srv, &Options{StopGrace: 200 * time.Millisecond})
			defer u.Close(time.Time{})
			if err := u.Connect(t.Context()); err != nil {
				t.Fatal(err)
			}
			// Every process crashes after its first call: a replay fails too.
			_, err := callTool(t.Context(), u, tc.tool, nil)
			if err == nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) || errors.Is(err, ErrTimeout) {
				t.Fatalf("%s, crashed after it ran: %v; want %v", tc.tool, err, tc.wantErr)
			}
			u.Close(time.Time{})
			counts, err := mcptest.ReadCounts(state)
			if err != nil {
				t.Fatal(err)
			}
			if runs := counts.ByTool[tc.tool]; runs != tc.wantRuns && (tc.wantErr != nil || runs < tc.wantRuns) {
				t.Errorf("%s ran %d times, want %d", tc.tool, runs, tc.wantRuns)
			}
		})
	}
}

func TestStdioCloseKillsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{})
	// The server leaves a grandchild behind, as npx and friends do.
	script := `sleep 300 & echo $! > "$1"; shift; exec "$@"`
	srv := shell("parent", script, append([]string{pidFile, cmd}, args...)...)
	srv.Env = env
	u := New(srv, &Options{StopGrace: 200 * time.Millisecond})
	if err := u.Connect(t.Context()); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	exited := mcptest.WatchExit(t, pid)
	if err := u.Close(time.Time{}); err != nil {
		t.Errorf("Close = %v", err)
	}
	if !exited(5 * time.Second) {
		t.Errorf("grandchild %d survived Close", pid)
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	srv := shell("stubborn", `trap '' TERM; while :; do read -r line || sleep 1; done`)
	p, err := startProcess(&srv, childEnv(&srv, "", os.LookupEnv), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.stop(100*time.Millisecond, 100*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stop = %v, want it to report the kill", err)
	}
	select {
	case <-p.exited:
	default:
		t.Error("process still running after stop")
	}
}

func TestStderrTailKeepsLastLines(t *testing.T) {
	tl := newTail(3, nil)
	tl.readFrom(strings.NewReader("one\ntwo\r\nthree\nfour\n" + strings.Repeat("x", 600)))
	got := tl.String()
	if !strings.HasPrefix(got, "… | three | four | xxx") || !strings.HasSuffix(got, "…") {
		t.Errorf("tail = %q", got)
	}
}

// TestReconnectStorm ports oh-my-pi's reconnect-storm test (issue #1592, where
// a server that crashed at once was spawned 66,487 times): a stdio server
// that exits right after tools/list must not be spawned without end.
func TestReconnectStorm(t *testing.T) {
	state := t.TempDir()
	u := New(stdio("storm", mcptest.Script{ExitAfterListTools: true, StateDir: state}), nil)
	defer u.Close(time.Time{})
	u.Start(nil)
	waitState(t, u, CrashLoop)
	counts, err := mcptest.ReadCounts(state)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Starts == 0 || counts.Starts > 10 {
		t.Errorf("%d spawns, want between 1 and 10", counts.Starts)
	}
	if got := u.State(); got != CrashLoop {
		t.Errorf("final state %v, want crash-loop", got)
	}
}

// TestCloseIsBounded: a server whose process group ignores stdin's close and
// SIGTERM is killed, and Close keeps to its deadline.
func TestCloseIsBounded(t *testing.T) {
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{})
	// The shell stays the group's leader, ignores SIGTERM, and outlives the
	// server by sleeping, as a stubborn wrapper script would.
	srv := shell("stubborn", `trap '' TERM; "$@"; sleep 300`, append([]string{cmd}, args...)...)
	srv.Env = env
	u := New(srv, nil)
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := u.Close(start.Add(600 * time.Millisecond))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v, want it to report the kill", err)
	}
	if took > 2*time.Second {
		t.Errorf("Close took %v with a 600ms deadline", took)
	}
}

// TestCloseKillsRetiredSessionsByTheDeadline: a reconnect leaves the old
// process being stopped in the background; Close still ends it, and the new
// one, by its deadline, though both ignore stdin's close and SIGTERM.
func TestCloseKillsRetiredSessionsByTheDeadline(t *testing.T) {
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{})
	srv := shell("stubborn", `trap '' TERM; "$@"; sleep 300`, append([]string{cmd}, args...)...)
	srv.Env = env
	u := New(srv, nil) // StopGrace 2 s: the old process needs 4 s to be killed
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	old := mcptest.WatchExit(t, u.Snapshot().PID)
	if err := reconnect(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	current := mcptest.WatchExit(t, u.Snapshot().PID)
	start := time.Now()
	deadline := start.Add(time.Second)
	err := u.Close(deadline)
	if took := time.Since(start); took > time.Second+300*time.Millisecond {
		t.Errorf("Close took %v with a 1 s deadline", took)
	}
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v, want it to report the kill", err)
	}
	if !old(0) || !current(0) {
		t.Errorf("a server process outlived Close: old exited %v, current exited %v", old(0), current(0))
	}
}

// TestCloseBoundedWithAHungDelete: a server that never answers the DELETE
// that ends its session holds Close no later than its deadline.
func TestCloseBoundedWithAHungDelete(t *testing.T) {
	u, srv, _ := httpUpstream(t, mcptest.Script{LegacyOnly: true}, config.Server{})
	srv.HangDeletes()
	start := time.Now()
	u.Close(start.Add(300 * time.Millisecond))
	if took := time.Since(start); took > 300*time.Millisecond+200*time.Millisecond {
		t.Errorf("Close took %v with a DELETE hanging and a 300ms deadline", took)
	}
}

// TestStdioChildGetsTheChain: a stdio server's process gets the gateway's
// chain (read through LookupEnv) and its own entry, as configured: ${VAR}
// unresolved, so that the chain carries no secret.
func TestStdioChildGetsTheChain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "chain")
	srv := shell("kid", `printf %s "$SWITCHBOARD_CHAIN" > "$1"`, "${OUT}")
	env := map[string]string{"OUT": out, config.ChainEnv: "0123456789abcdef"}
	u := New(srv, &Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	defer u.Close(time.Time{})
	if err := u.Connect(t.Context()); err == nil {
		t.Fatal("Connect succeeded; the server exits at once")
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := config.ParseChain("0123456789abcdef").Next(&srv).String(); string(got) != want {
		t.Errorf("the child's %s = %q, want %q", config.ChainEnv, got, want)
	}
}

// TestStdioRefusalIsRecognised: a process that exits with
// config.ChainExitCode after a line on stderr that starts as the
// switchboard command's refusal does is a Switchboard that refused to run
// inside the gateway: ErrRecursion, with what it said. Either alone is an
// ordinary failure, and so is the line within another (a nested gateway's
// log of its own server's refusal).
func TestStdioRefusalIsRecognised(t *testing.T) {
	const line = `switchboard: refusing to start: server "sb" (in /x/mcp.json) started this Switchboard`
	for _, tc := range []struct {
		name, script string
		refused      bool
	}{
		{"the refusal", `echo 'npm notice: something' >&2; echo '` + line + `' >&2; exit 3`, true},
		{"another status", `echo '` + line + `' >&2; exit 1`, false},
		{"another line", `echo 'fatal: no config' >&2; exit 3`, false},
		{"the line within another", `echo 'level=WARN msg="server down" error="` + line + `"' >&2; exit 3`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := New(shell("sb", tc.script), nil)
			defer u.Close(time.Time{})
			err := u.Connect(t.Context())
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			if got := errors.Is(err, ErrRecursion); got != tc.refused {
				t.Errorf("Connect = %v; ErrRecursion: %v, want %v", err, got, tc.refused)
			}
			if tc.refused {
				want := `server "sb": connect: ` + ErrRecursion.Error() + " (process exited with status 3); stderr: npm notice: something | " + line
				if err.Error() != want {
					t.Errorf("Connect = %q, want %q", err, want)
				}
			}
		})
	}
}

// answersInitialize is a shell script's start that answers the handshake's
// initialize, the first request a stdio server gets, and no more.
const answersInitialize = `read -r line; id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'); ` +
	`printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id"; `

// TestCloseInterruptsAServerThatNeverListed: a server that answered the
// handshake but not its first tools/list, and ignores its stdin closing,
// is interrupted at once when the upstream closes: the grace it would get
// to exit on its own is for a session that was used. With a StopGrace of
// an hour, a Close that granted it would not return.
func TestCloseInterruptsAServerThatNeverListed(t *testing.T) {
	// The server tells through a FIFO that it has read the notification
	// that ends the handshake and the tools/list after it.
	fifo := filepath.Join(t.TempDir(), "listing")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := shell("stuck", answersInitialize+`read -r _; read -r _; echo listing > "$1"; exec sleep 100000`, fifo)
	u := New(srv, &Options{StopGrace: time.Hour})
	u.Start(nil)
	if b, err := os.ReadFile(fifo); err != nil || string(b) != "listing\n" {
		t.Fatalf("the server's word: %q, %v", b, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- u.Close(time.Time{}) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waited for a server that never listed to exit on its own")
	}
}
