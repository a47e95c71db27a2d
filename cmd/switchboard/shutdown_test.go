package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// A callResult is how a call ended.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

// sleep calls tool, an mcptest sleep, for ms in the background, and sends
// how it ended on done.
func sleep(cs *mcp.ClientSession, tool string, ms int, done chan<- callResult) {
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"ms": ms}})
		done <- callResult{res, err}
	}()
}

// waitRunning waits until the mcptest servers of state have started n
// sleeps; a call that ends before is fatal.
func waitRunning(t *testing.T, state string, n int, done <-chan callResult) {
	t.Helper()
	for {
		if counts, err := mcptest.ReadCounts(state); err == nil && counts.ByTool["sleep"] == n {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("a call ended before it should: %v, %v", r.res, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestServeFinishesInFlightCallsOnSIGINT(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	cfg := writeConfig(t, map[string]mcptest.Script{"slow": {StateDir: state}}, nil)
	g := startServe(t, "--config", cfg)
	g.waitLog(t, settledRE)
	cs := connectHTTP(t, g.url)
	done := make(chan callResult, 1)
	sleep(cs, "slow__sleep", 1500, done)
	waitRunning(t, state, 1, done) // then interrupt the gateway
	if err := g.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Errorf("the in-flight call = %+v, %v; want it to finish", r.res, r.err)
	}
	cs.Close()
	for line := range g.lines {
		g.log.WriteString(line + "\n")
	}
	<-g.done
	if g.err != nil {
		t.Errorf("exit after SIGINT: %v\n%s", g.err, g.log)
	}
	assertNoSurvivors(t, state)
}

// TestServeShutdownUnderLoad: SIGTERM with 64 calls in flight, from several
// clients to two servers: the gateway stops accepting, every call is
// answered once and runs once, and no server process survives.
func TestServeShutdownUnderLoad(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	cfg := writeConfig(t, map[string]mcptest.Script{"one": {StateDir: state}, "two": {StateDir: state}}, nil)
	g := startServe(t, "--config", cfg)
	g.waitLog(t, settledRE)

	const clients, perClient = 8, 8
	results := make(chan callResult, clients*perClient)
	var sessions []*mcp.ClientSession
	for c := range clients {
		cs := connectHTTP(t, g.url)
		sessions = append(sessions, cs)
		server := []string{"one", "two"}[c%2]
		for range perClient {
			sleep(cs, server+"__sleep", 2000, results)
		}
	}
	waitRunning(t, state, clients*perClient, results) // then stop the gateway
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range clients * perClient {
		if r := <-results; r.err != nil || r.res.IsError {
			t.Errorf("a call in flight = %+v, %v; want it answered", r.res, r.err)
		}
	}
	if _, err := http.Get(g.url + "/healthz"); err == nil {
		t.Error("the gateway still accepts connections after its calls finished")
	}
	for _, cs := range sessions {
		cs.Close()
	}
	for line := range g.lines {
		g.log.WriteString(line + "\n")
	}
	<-g.done
	if g.err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", g.err, g.log.String())
	}
	if counts, err := mcptest.ReadCounts(state); err != nil || counts.ByTool["sleep"] != clients*perClient {
		t.Errorf("the servers ran %v calls (%v), want %d: none twice", counts.ByTool, err, clients*perClient)
	}
	assertNoSurvivors(t, state)
}

// TestServeShutdownEndsALongCall: on SIGTERM, a call that outlasts the
// shutdown timeout is ended (its server closed) and its client answered
// with an error; the gateway exits, and leaves no process behind.
func TestServeShutdownEndsALongCall(t *testing.T) {
	isolate(t)
	state := t.TempDir()
	// No timeout of its own: only the shutdown ends the call.
	command, args, env := mcptest.StdioCommand(mcptest.Script{StateDir: state})
	cfg := writeConfig(t, nil, map[string]any{"one": map[string]any{"command": command, "args": args, "env": env, "timeout": 0}})
	g := startServe(t, "--config", cfg, "--shutdown-timeout", "200ms")
	g.waitLog(t, settledRE)
	cs := connectHTTP(t, g.url)
	done := make(chan callResult, 1)
	sleep(cs, "one__sleep", 3_600_000, done)
	waitRunning(t, state, 1, done)
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.log.String())
	}
	if r := <-done; r.err == nil && (r.res == nil || !r.res.IsError) {
		t.Errorf("the long call = %+v, want an error", r.res)
	}
	if !strings.Contains(g.log.String(), "in-flight calls did not finish in time; closing the servers") {
		t.Errorf("no warning of the calls cut short:\n%s", g.log.String())
	}
	cs.Close()
	assertNoSurvivors(t, state)
}
