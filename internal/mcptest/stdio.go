package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ScriptEnv is the environment variable through which [StdioCommand] hands
// a JSON-encoded [Script] to a child, and from which [RunIfChild] reads it.
const ScriptEnv = "MCPTEST_SCRIPT"

// defaultGarbage is the garbage line of a script that sets none: a line
// that no JSON decoder accepts.
const defaultGarbage = "mcptest: this line is not JSON"

// ServeStdio serves s on in and out (os.Stdin and os.Stdout in a child
// process) until in closes, ctx is done or an exit knob fires, and then
// returns nil. It honours the stdio-only knobs (GarbageOnStart,
// GarbageOnCall, Garbage, GarbageBytes) and records events under s.StateDir, if set.
//
// The exit knobs (ExitAfterInitialize, ExitAfterListTools, ExitOnCall) end
// the process with os.Exit(0): ServeStdio is the command form. In and out
// are closed when it returns, if they are io.Closers.
func ServeStdio(ctx context.Context, s Script, in io.Reader, out io.Writer) error {
	return serveStdio(ctx, s, in, out, func() { os.Exit(0) })
}

// serveStdio is ServeStdio with the exit action given: nil makes the exit
// knobs close the connection instead, so that tests can run it in process.
func serveStdio(ctx context.Context, script Script, in io.Reader, out io.Writer, exit func()) error {
	w := &lockedWriter{w: out}
	garbage := script.garbageLine()
	if script.GarbageOnStart {
		w.writeString(garbage)
	}
	var rec *recorder
	if script.StateDir != "" {
		var err error
		if rec, err = openRecorder(script.StateDir); err != nil {
			_ = readCloser(in).Close()
			_ = w.Close()
			return err
		}
		defer rec.close() // after srv.Close, which waits for every handler
		rec.record(fmt.Sprintf("start %d", os.Getpid()))
	}
	srv := newServer(script, rec, exit, func() { w.writeString(garbage) })
	defer srv.Close()

	sess, err := srv.connect(ctx, &mcp.IOTransport{Reader: readCloser(in), Writer: w})
	if err != nil {
		return err
	}
	select {
	case <-sess.ended:
	case <-ctx.Done():
	}
	return nil
}

// lockedWriter serializes writes, so that garbage lines never land inside a
// JSON-RPC message, and closes the underlying writer if it can.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) writeString(s string) {
	_, _ = l.Write([]byte(s))
}

func (l *lockedWriter) Close() error {
	if c, ok := l.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// RunIfChild must be called first in TestMain. If [ScriptEnv] is set, the
// test binary was started by [StdioCommand]: RunIfChild serves the script on
// stdin and stdout (or, with [ListenEnv] set too, over HTTP: see
// [StartHTTPProcess]) and exits the process. Otherwise it returns at once.
func RunIfChild() {
	if _, ok := os.LookupEnv(BrowserEnv); ok && len(os.Args) > 1 {
		os.Exit(browse(os.Args[len(os.Args)-1]))
	}
	data, ok := os.LookupEnv(ScriptEnv)
	if !ok {
		return
	}
	var s Script
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		fmt.Fprintf(os.Stderr, "mcptest: %s: %v\n", ScriptEnv, err)
		os.Exit(2)
	}
	for n := range s.StderrLines {
		fmt.Fprintf(os.Stderr, "mcptest: stderr line %d\n", n+1)
	}
	os.Stderr.WriteString(s.Stderr)
	if _, ok := os.LookupEnv(ListenEnv); ok {
		if err := serveHTTPChild(s); err != nil {
			fmt.Fprintf(os.Stderr, "mcptest: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if err := ServeStdio(context.Background(), s, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "mcptest: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StdioCommand returns the command, arguments and environment of a child
// process that serves s over stdio: the current test binary (whose TestMain
// calls [RunIfChild]), with arguments that run no tests, and {ScriptEnv:
// JSON of s}. They fit a Switchboard config entry {"command": ..., "args":
// ..., "env": ...}, or exec.Command with the env appended to os.Environ().
//
// The env also sets GORACE (keeping any options of the current process) so
// that a race-enabled child exits at once rather than after the race
// detector's default 1s grace period.
//
// It panics if s cannot be encoded (an InputSchema holding a value JSON
// cannot represent).
func StdioCommand(s Script) (command string, args []string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	data, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("mcptest: encoding script: %v", err))
	}
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return exe, []string{"-test.run=^$"}, map[string]string{ScriptEnv: string(data), "GORACE": gorace}
}
