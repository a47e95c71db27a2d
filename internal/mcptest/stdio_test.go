package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioPipes runs serveStdio in process, with exits closing the connection,
// and returns the client side transport and the result of serveStdio.
func stdioPipes(ctx context.Context, script Script) (mcp.Transport, <-chan error) {
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- serveStdio(ctx, script, serverIn, serverOut, nil) }()
	return &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, errc
}

func TestServeStdioInProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		tr, errc := stdioPipes(ctx, Script{Name: "piped", CallDelay: time.Second})
		cs, err := newClient(nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		if got := cs.InitializeResult().ServerInfo.Name; got != "piped" {
			t.Errorf("server name %q", got)
		}
		names, err := ToolNames(ctx, cs)
		if err != nil || len(names) != len(DefaultTools()) {
			t.Errorf("tools %v, %v", names, err)
		}
		start := time.Now()
		if got, _, err := callText(ctx, cs, "add", map[string]any{"a": 1, "b": 1}); err != nil || got != "2" {
			t.Errorf("add = %q, %v", got, err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("call took %v, want the 1s CallDelay", d)
		}
		cs.Close()
		if err := <-errc; err != nil {
			t.Errorf("serveStdio: %v", err)
		}
	})
}

func TestServeStdioContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		tr, errc := stdioPipes(ctx, Script{HangOnListTools: true})
		cs, err := newClient(nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		listErr := make(chan error, 1)
		go func() {
			_, err := cs.ListTools(context.Background(), nil)
			listErr <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serveStdio: %v", err)
		}
		if err := <-listErr; err == nil {
			t.Error("hung ListTools succeeded")
		}
		waitClosed(t, cs)
	})
}

func TestServeStdioExits(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		script Script
		run    func(*mcp.ClientSession) error // what the client does before the exit
	}{
		{"afterInitialize", Script{ExitAfterInitialize: true, LegacyOnly: true}, func(*mcp.ClientSession) error { return nil }},
		{"afterListTools", Script{ExitAfterListTools: true}, func(cs *mcp.ClientSession) error {
			_, err := cs.ListTools(ctx, nil)
			return err
		}},
		{"onCall", Script{ExitOnCall: 1}, func(cs *mcp.ClientSession) error {
			if _, _, err := callText(ctx, cs, "echo", nil); err == nil {
				return errors.New("the exiting call succeeded")
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, errc := stdioPipes(ctx, tt.script)
				cs, err := newClient(nil).Connect(ctx, tr, nil)
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				defer cs.Close()
				if err := tt.run(cs); err != nil {
					t.Fatal(err)
				}
				if err := <-errc; err != nil {
					t.Errorf("serveStdio: %v", err)
				}
				waitClosed(t, cs)
			})
		})
	}
}

func TestServeStdioGarbage(t *testing.T) {
	ctx := context.Background()
	t.Run("onStart", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, errc := stdioPipes(ctx, Script{GarbageOnStart: true})
			if cs, err := newClient(nil).Connect(ctx, tr, nil); err == nil {
				cs.Close()
				t.Fatal("Connect succeeded despite garbage on stdout")
			}
			if err := <-errc; err != nil {
				t.Errorf("serveStdio: %v", err)
			}
		})
	})
	t.Run("onCall", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, errc := stdioPipes(ctx, Script{GarbageOnCall: true})
			cs, err := newClient(nil).Connect(ctx, tr, nil)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Errorf("ListTools: %v", err)
			}
			if _, _, err := callText(ctx, cs, "echo", nil); err == nil {
				t.Error("call succeeded despite garbage on stdout")
			}
			cs.Close()
			if err := <-errc; err != nil {
				t.Errorf("serveStdio: %v", err)
			}
		})
	})
}

// TestServeStdioGarbageLine: Garbage and GarbageBytes choose the line
// written, which may be far longer than an environment variable.
func TestServeStdioGarbageLine(t *testing.T) {
	for _, tt := range []struct {
		name   string
		script Script
		want   string
	}{
		{"default", Script{}, defaultGarbage},
		{"json", Script{Garbage: `{"level":30,"msg":"started"}`}, `{"level":30,"msg":"started"}`},
		{"padded", Script{Garbage: "banner", GarbageBytes: 1 << 20}, "banner" + strings.Repeat("#", 1<<20-len("banner"))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tt.script.GarbageOnStart = true
				clientIn, serverOut := io.Pipe()
				serverIn, clientOut := io.Pipe()
				errc := make(chan error, 1)
				go func() { errc <- serveStdio(context.Background(), tt.script, serverIn, serverOut, nil) }()
				line, err := bufio.NewReader(clientIn).ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if line != tt.want+"\n" {
					t.Errorf("first line: %d bytes starting %.40q, want %d starting %.40q", len(line), line, len(tt.want)+1, tt.want)
				}
				clientOut.Close()
				if err := <-errc; err != nil {
					t.Errorf("serveStdio: %v", err)
				}
				clientIn.Close()
			})
		})
	}
}

func TestScriptJSON(t *testing.T) {
	s := Script{
		Name:      "x",
		Tools:     []ToolSpec{{Name: "t", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, Behavior: Sleep}},
		PageSize:  3,
		CallDelay: 1500 * time.Millisecond,
		StateDir:  "/tmp/state",
	}
	_, _, env := StdioCommand(s)
	var got Script
	if err := json.Unmarshal([]byte(env[ScriptEnv]), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// childCommand returns the command that runs script in a child process.
func childCommand(script Script) *exec.Cmd {
	command, args, env := StdioCommand(script)
	cmd := exec.Command(command, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func TestStdioChildProcess(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := Script{StateDir: dir, ExitOnCall: 2}

	// The first process answers a list and a call, then exits on the
	// second call.
	cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: childCommand(script)}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	names, err := ToolNames(ctx, cs)
	if err != nil || len(names) != len(DefaultTools()) {
		t.Errorf("tools %v, %v", names, err)
	}
	if got, _, err := callText(ctx, cs, "increment", nil); err != nil || got != "1" {
		t.Errorf("first call = %q, %v", got, err)
	}
	if _, _, err := callText(ctx, cs, "increment", nil); err == nil {
		t.Error("second call succeeded; want the process to exit")
	}
	_ = cs.Wait()
	if _, _, err := callText(ctx, cs, "echo", nil); !isClosedErr(err) {
		t.Errorf("call after exit: err = %v, want ErrConnectionClosed", err)
	}
	cs.Close()

	// A second process counts its own calls.
	cs, err = newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: childCommand(script)}, nil)
	if err != nil {
		t.Fatalf("second Connect: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("ListTools: %v", err)
	}
	if got, _, err := callText(ctx, cs, "increment", nil); err != nil || got != "1" {
		t.Errorf("call in the second process = %q, %v", got, err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	got, err := ReadCounts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.PIDs) != 2 || got.PIDs[0] == got.PIDs[1] || got.PIDs[0] == os.Getpid() {
		t.Errorf("PIDs %v, want two child processes", got.PIDs)
	}
	got.PIDs = nil
	want := Counts{Starts: 2, ListTools: 2, Calls: 3, ByTool: map[string]int{"increment": 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadCounts (-want +got):\n%s", diff)
	}
}

func TestStdioChildGarbageOnStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := childCommand(Script{GarbageOnStart: true})
	if cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil); err == nil {
		cs.Close()
		t.Fatal("Connect succeeded despite garbage on stdout")
	}
	// The failed Connect closed stdin and waited: the child exited on its
	// own.
	if ps := cmd.ProcessState; ps == nil || ps.ExitCode() != 0 {
		t.Errorf("child state %v, want exited with 0", ps)
	}
}

func TestReadCountsEmpty(t *testing.T) {
	got, err := ReadCounts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Counts{}, got); diff != "" {
		t.Errorf("ReadCounts (-want +got):\n%s", diff)
	}
}
