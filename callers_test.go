package switchboard

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// What callers see: the startup gate, the query and its filters, the
// observer, and the states.

// TestCallWaitsForAConnectingOwner: a call to a tool whose server is still
// connecting, with nothing cached, waits for that server instead of
// failing as unknown; a name no connecting server can own does not wait.
func TestCallWaitsForAConnectingOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("slow", mcptest.Script{Tools: tools("echo")})
		f.add("fast", mcptest.Script{Tools: tools("echo")})
		f.delay("slow", time.Second)
		m := f.managerWith(&Options{Cache: CacheOff, StartupGate: DefaultStartupGate}, server("slow"), server("fast"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"fast__echo"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Fatalf("tools at the gate (-want +got):\n%s", diff)
		}
		start := time.Now()
		if _, err := callTool(t.Context(), m, "other__echo", nil); !errors.Is(err, ErrUnknownTool) || time.Since(start) != 0 {
			t.Errorf("a call no server can own = %v after %v, want ErrUnknownTool at once", err, time.Since(start))
		}
		res, err := callTool(t.Context(), m, "slow__echo", map[string]any{"n": 1})
		if err != nil || mcptest.Text(res) != `{"n":1}` {
			t.Fatalf("a call to the connecting server = %v, %v; want it to wait and succeed", res, err)
		}
		if waited := time.Since(start); waited != time.Second-DefaultStartupGate {
			t.Errorf("the call waited %v, want until the server connected", waited)
		}
		if _, err := callTool(t.Context(), m, "slow__nope", nil); !errors.Is(err, ErrUnknownTool) {
			t.Errorf("a call to a tool its server lacks = %v, want ErrUnknownTool", err)
		}
	})
}

// TestFilterRefusesTheCallsItHides: a dynamic filter that hides a tool from
// a query also refuses that query's call to it; prompt and resource filters
// do the same for theirs.
func TestFilterRefusesTheCallsItHides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{
			Tools:     tools("read", "write"),
			Prompts:   []mcptest.PromptSpec{{Name: "public"}, {Name: "secret"}},
			Resources: []mcptest.ResourceSpec{{URI: "mem://public", Name: "public", Text: "p"}, {URI: "mem://secret", Name: "secret", Text: "s"}},
			Templates: []mcptest.TemplateSpec{{URITemplate: "mem://t/{id}", Name: "t"}},
		})
		admin := func(fc FilterContext) bool { return fc.Query.Agent == "admin" }
		m := f.managerWith(&Options{
			Cache: CacheOff,
			Filter: func(_ context.Context, fc FilterContext, tool *mcp.Tool) (bool, error) {
				return admin(fc) || tool.Name == "read", nil
			},
			PromptFilter: func(_ context.Context, fc FilterContext, p *mcp.Prompt) (bool, error) {
				return admin(fc) || p.Name == "public", nil
			},
			ResourceFilter: func(_ context.Context, fc FilterContext, r *mcp.Resource) (bool, error) {
				return admin(fc) || r.URI == "mem://public", nil
			},
		}, server("s"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ctx := t.Context()
		guest, root := &Query{Agent: "guest"}, &Query{Agent: "admin"}

		if _, err := m.CallTool(ctx, guest, &mcp.CallToolParams{Name: "s__write"}); !errors.Is(err, ErrUnknownTool) {
			t.Errorf("guest's call of a hidden tool = %v, want ErrUnknownTool", err)
		}
		if got := srv.Counts().ByTool["write"]; got != 0 {
			t.Errorf("the hidden tool ran %d times", got)
		}
		if _, err := m.CallTool(ctx, root, &mcp.CallToolParams{Name: "s__write"}); err != nil {
			t.Errorf("admin's call = %v", err)
		}

		var prompts []string
		for _, p := range m.Prompts(ctx, guest) {
			prompts = append(prompts, p.Name)
		}
		if diff := cmp.Diff([]string{"s__public"}, prompts); diff != "" {
			t.Errorf("guest's prompts (-want +got):\n%s", diff)
		}
		if _, err := m.GetPrompt(ctx, guest, &mcp.GetPromptParams{Name: "s__secret"}); !errors.Is(err, ErrUnknownPrompt) {
			t.Errorf("guest's get of a hidden prompt = %v, want ErrUnknownPrompt", err)
		}
		if _, err := m.GetPrompt(ctx, root, &mcp.GetPromptParams{Name: "s__secret"}); err != nil {
			t.Errorf("admin's get = %v", err)
		}

		var uris []string
		for _, r := range m.Resources(ctx, guest) {
			uris = append(uris, r.Resource.URI)
		}
		if diff := cmp.Diff([]string{"mem://public"}, uris); diff != "" {
			t.Errorf("guest's resources (-want +got):\n%s", diff)
		}
		if got := len(m.ResourceTemplates(ctx, guest)); got != 0 {
			t.Errorf("guest sees %d templates, want none", got)
		}
		for _, uri := range []string{"mem://secret", "mem://t/1"} {
			if _, err := m.ReadResource(ctx, guest, &mcp.ReadResourceParams{URI: uri}); !errors.Is(err, ErrUnknownResource) {
				t.Errorf("guest's read of %s = %v, want ErrUnknownResource", uri, err)
			}
			if err := m.SubscribeResource(ctx, guest, uri); !errors.Is(err, ErrUnknownResource) {
				t.Errorf("guest's subscription to %s = %v, want ErrUnknownResource", uri, err)
			}
		}
		if res, err := m.ReadResource(ctx, root, &mcp.ReadResourceParams{URI: "mem://secret"}); err != nil || res.Contents[0].Text != "s" {
			t.Errorf("admin's read = %v, %v", res, err)
		}
	})
}

// TestUnknownToolSuggests: a call of a name that no server exposes fails
// with ErrUnknownTool, an UnknownToolError whose text and Suggestions name
// the tools the caller may have meant, among those it may see.
func TestUnknownToolSuggests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("filesystem", mcptest.Script{Tools: tools("read_text_file", "write_file", "secret_file")})
		f.add("backup", mcptest.Script{Tools: tools("read_text_file")})
		guest := &Query{Agent: "guest"}
		m := f.managerWith(&Options{
			Cache: CacheOff,
			Filter: func(_ context.Context, fc FilterContext, tool *mcp.Tool) (bool, error) {
				return fc.Query.Agent != "guest" || fc.Server != "backup" && tool.Name != "secret_file", nil
			},
		}, server("filesystem"), server("backup"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			q     *Query
			name  string
			want  []string
			wants string
		}{
			{nil, "read_text_file", []string{"backup__read_text_file", "filesystem__read_text_file"},
				`call tool: unknown tool "read_text_file"; did you mean one of "backup__read_text_file", "filesystem__read_text_file"?`},
			{guest, "read_text_file", []string{"filesystem__read_text_file"},
				`call tool: unknown tool "read_text_file"; did you mean "filesystem__read_text_file"?`},
			{nil, "filesystem_write_file", []string{"filesystem__write_file"}, `did you mean "filesystem__write_file"?`},
			{nil, "filesystem__writ_file", []string{"filesystem__write_file"}, `did you mean "filesystem__write_file"?`},
			{nil, "secret_file", []string{"filesystem__secret_file"}, `did you mean "filesystem__secret_file"?`},
			// A hidden tool is unknown, and never suggested.
			{guest, "secret_file", nil, `call tool: unknown tool "secret_file"`},
			{guest, "filesystem__secret_file", nil, `call tool: unknown tool "filesystem__secret_file"`},
			{nil, "delete_everything", nil, `call tool: unknown tool "delete_everything"`},
		} {
			_, err := m.CallTool(t.Context(), tc.q, &mcp.CallToolParams{Name: tc.name})
			var unknown *UnknownToolError
			if !errors.Is(err, ErrUnknownTool) || !errors.As(err, &unknown) {
				t.Errorf("call %s as %v = %v; want ErrUnknownTool, an *UnknownToolError", tc.name, tc.q, err)
				continue
			}
			if diff := cmp.Diff(tc.want, unknown.Suggestions); diff != "" {
				t.Errorf("call %s as %v: suggestions (-want +got):\n%s", tc.name, tc.q, diff)
			}
			if !strings.HasSuffix(err.Error(), tc.wants) {
				t.Errorf("call %s as %v = %q; want it to end %q", tc.name, tc.q, err, tc.wants)
			}
		}
	})
}

// TestObserver: the observer hears of calls, with their outcomes, on the
// callers' goroutines; a subscriber hears, in order, of state changes,
// reconnects, failed attempts and list fetches.
func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{})
		var mu sync.Mutex
		var calls, events []string
		record := func(to *[]string, s string) {
			mu.Lock()
			defer mu.Unlock()
			*to = append(*to, s)
		}
		o := &Observer{
			CallStarted: func(server, tool string) { record(&calls, "start "+server+" "+tool) },
			CallEnded:   func(c CallEnd) { record(&calls, "end "+c.Server+" "+c.Tool+" "+c.Outcome.String()) },
		}
		m := f.managerWith(&Options{Cache: CacheOff, Observer: o}, server("s"))
		m.Subscribe(func(ev Event) {
			switch ev.Kind {
			case EventState:
				record(&events, "state "+ev.Server+" "+ev.From.String()+">"+ev.State.String())
				if ev.Reconnected {
					record(&events, "reconnected "+ev.Server)
				}
			case EventAttemptFailed:
				record(&events, "connect failed "+ev.Server)
			case EventListed:
				record(&events, "listed "+ev.Server+" "+ev.List)
			}
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		callTool(t.Context(), m, "s__echo", nil)
		callTool(t.Context(), m, "s__fail", nil)
		callTool(t.Context(), m, "s__add", map[string]any{"a": 1}) // b is required
		f.fail("s", errors.New("refused"))
		srv.Restart()
		synctest.Wait()
		callTool(t.Context(), m, "s__echo", nil) // the early attempt fails
		f.fail("s", nil)
		mcptest.PassTime(time.Second) // the next scheduled attempt connects
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		wantCalls := []string{
			"start s s__echo", "end s s__echo ok",
			"start s s__fail", "end s s__fail tool_error",
			"start s s__add", "end s s__add invalid_arguments",
			"start s s__echo", "end s s__echo unavailable",
		}
		if diff := cmp.Diff(wantCalls, calls); diff != "" {
			t.Errorf("calls observed (-want +got):\n%s", diff)
		}
		wantEvents := []string{
			"state s disconnected>connecting",
			"state s connecting>connected", "listed s tools",
			"state s connected>reconnecting",
			"connect failed s", // at once
			"connect failed s", // early, for the call
			"state s reconnecting>connected", "reconnected s", "listed s tools",
		}
		if diff := cmp.Diff(wantEvents, events); diff != "" {
			t.Errorf("events observed (-want +got):\n%s", diff)
		}
	})
}

// TestObserverCostsNoAllocation: the call hooks allocate nothing: a call
// costs as many allocations with an observer as without.
func TestObserverCostsNoAllocation(t *testing.T) {
	caller := func(o *Observer) func() {
		f := newFleet(t)
		f.add("s", mcptest.Script{})
		m := f.managerWith(&Options{Cache: CacheOff, Observer: o}, server("s"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		params := &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"x": 1}}
		return func() {
			if _, err := m.CallTool(context.Background(), nil, params); err != nil {
				t.Fatal(err)
			}
		}
	}
	var calls int
	observedCall := caller(&Observer{CallStarted: func(string, string) { calls++ }, CallEnded: func(CallEnd) { calls++ }})
	bareCall := caller(nil)
	// The client and server goroutines, and whatever else runs in the
	// process, allocate too, unevenly: the least of a few rounds, taken in
	// turn, is the call's own cost.
	observed, bare := math.Inf(1), math.Inf(1)
	for range 5 {
		observed = min(observed, testing.AllocsPerRun(100, observedCall))
		bare = min(bare, testing.AllocsPerRun(100, bareCall))
	}
	if calls == 0 {
		t.Fatal("the observer heard nothing")
	}
	if observed > bare+2 {
		t.Errorf("a call allocates %.1f times with an observer, %.1f without", observed, bare)
	}
}

// TestStatusHasThePIDOfAStdioServer.
func TestStatusHasThePIDOfAStdioServer(t *testing.T) {
	state := t.TempDir()
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{StateDir: state})
	m := New(&config.Config{Servers: []config.Server{{Name: "kid", Command: cmd, Args: args, Env: env}}}, &Options{Cache: CacheOff, StartupGate: -1})
	defer m.Close()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	counts, err := mcptest.ReadCounts(state)
	if err != nil || len(counts.PIDs) != 1 {
		t.Fatalf("recorded starts: %v, %v", counts.PIDs, err)
	}
	if got := m.Status()[0].PID; got != counts.PIDs[0] {
		t.Errorf("PID = %d, want the process's %d", got, counts.PIDs[0])
	}
}

// TestSubscriptionsSurviveManagerReconnects: a resource subscription lives
// as long as its server is configured: it survives ReconnectFailed, a full
// Reconnect, a named one, and a Disconnect followed by Connect.
func TestSubscriptionsSurviveManagerReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}}})
		m := f.managerWith(&Options{Cache: CacheOff}, server("s"))
		updates := make(chan string, 10)
		m.Subscribe(func(ev Event) {
			if ev.Kind == EventResourceUpdated {
				updates <- ev.URI
			}
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := m.SubscribeResource(t.Context(), nil, "mem://a"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name      string
			reconnect func() error
		}{
			{"failed-only", func() error {
				f.fail("s", errors.New("refused"))
				srv.Restart()
				mcptest.PassTime(time.Minute) // past the ladder: failed
				f.fail("s", nil)
				return m.ReconnectFailed(t.Context())
			}},
			{"full", func() error { return m.Reconnect(t.Context()) }},
			{"named", func() error { return m.Reconnect(t.Context(), "s") }},
			{"disconnect and connect", func() error {
				if err := m.Disconnect(t.Context(), "s"); err != nil {
					return err
				}
				return m.Connect(t.Context())
			}},
		} {
			if err := tc.reconnect(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			mcptest.PassTime(time.Second) // the new session lists, and subscribes
			synctest.Wait()
			if diff := cmp.Diff([]string{"mem://a"}, srv.Subscriptions()); diff != "" {
				t.Errorf("%s: server subscriptions (-want +got):\n%s", tc.name, diff)
			}
			srv.NotifyResourceUpdated("mem://a")
			if got := <-updates; got != "mem://a" {
				t.Errorf("%s: update of %q", tc.name, got)
			}
		}
		if st := m.Status()[0]; st.State != StateConnected {
			t.Errorf("state %v after the reconnects, want connected", st.State)
		}
	})
}

// lockedBuffer is a log's buffer that the manager's goroutines write to
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was written since the last take.
func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestStdoutNoiseWarnedOncePerConfig: the lines a stdio server writes on
// stdout that are not JSON-RPC are warned of once per config: a manager
// that starts it again on the same cache logs them at info level, and one
// whose config changed (by a reload too) warns again. (Its log's next line
// about them comes at most every 10 s: the test asks the hook that sets
// its level.)
func TestStdoutNoiseWarnedOncePerConfig(t *testing.T) {
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{GarbageOnStart: true})
	noisy := config.Server{Name: "noisy", Command: cmd, Args: args, Env: env}
	dir := t.TempDir()
	logs := &lockedBuffer{}
	start := func(srv config.Server) *Manager {
		t.Helper()
		m := New(&config.Config{Servers: []config.Server{srv}}, &Options{CacheDir: dir, StartupGate: -1,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		return m
	}
	const skipped = `msg="skipped lines on stdout that are not JSON-RPC" server=noisy`
	wantLevel := func(when, level string) {
		t.Helper()
		if log := logs.take(); !strings.Contains(log, "level="+level+" "+skipped) {
			t.Errorf("%s: want the skipped line logged at %s; the log:\n%s", when, level, log)
		}
	}
	start(noisy).Close()
	wantLevel("the first run", "WARN")
	m := start(noisy)
	defer m.Close()
	wantLevel("a run on the same config", "INFO")

	changed := noisy.Clone()
	changed.Env["SOMETHING"] = "else"
	if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{changed}}); err != nil {
		t.Fatal(err)
	}
	if m.quietNoise("noisy")() {
		t.Error("after a reload that changed its config, the skipped lines would be logged at info level, not warned of")
	}
}
