package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild() // the stdio servers of TestSkippedLines
	goleak.VerifyTestMain(m)
}

// scrape returns the metric families that h serves, parsed by the
// Prometheus text parser, and the raw text.
func scrape(t *testing.T, x *Metrics) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	x.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	return families, string(body)
}

// value returns the value of the series of family with labels, and
// whether it exists.
func value(families map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, bool) {
	f := families[family]
	if f == nil {
		return 0, false
	}
series:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsCountWhatHappened: after known calls, a restart and a server
// that cannot connect, every family counts what happened, and no label or
// value carries a secret.
func TestMetricsCountWhatHappened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "planted-s3cret"
		srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo", Behavior: mcptest.Echo}, {Name: "bad", Behavior: mcptest.Fail}}})
		defer srv.Close()
		x := New()
		cfg := &config.Config{Servers: []config.Server{
			{Name: "s", Command: "in-memory"},
			{Name: "down", URL: "https://example.invalid/mcp?key=${TOKEN}", Type: config.HTTP, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		}}
		m := switchboard.New(cfg, &switchboard.Options{
			StartupGate: -1, Cache: switchboard.CacheOff, Observer: x.Observer(),
			LookupEnv: func(k string) (string, bool) { return secret, k == "TOKEN" },
			Dial: func(ctx context.Context, s config.Server) (mcp.Transport, error) {
				if s.Name == "s" {
					return srv.ConnectInMemory(ctx)
				}
				return nil, errors.New("refused, with " + secret)
			},
		})
		defer m.Close()
		defer x.Follow(m)()
		m.Connect(t.Context())
		for _, name := range []string{"s__echo", "s__echo", "s__bad"} {
			if _, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}}); err != nil {
				t.Fatal(err)
			}
		}
		srv.Restart() // the session drops: the server reconnects
		synctest.Wait()
		if _, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		families, text := scrape(t, x)
		for _, tc := range []struct {
			family string
			labels map[string]string
			want   float64
		}{
			{"switchboard_tool_calls_total", map[string]string{"server": "s", "tool": "s__echo", "outcome": "ok"}, 3},
			{"switchboard_tool_calls_total", map[string]string{"server": "s", "tool": "s__bad", "outcome": "tool_error"}, 1},
			{"switchboard_tool_call_duration_seconds", map[string]string{"server": "s"}, 4},
			{"switchboard_calls_in_flight", map[string]string{"server": "s"}, 0},
			{"switchboard_tools_exposed", map[string]string{"server": "s"}, 2},
			{"switchboard_tools_exposed", map[string]string{"server": "down"}, 0},
			{"switchboard_upstream_state", map[string]string{"server": "s", "state": "connected"}, 1},
			{"switchboard_upstream_state", map[string]string{"server": "s", "state": "reconnecting"}, 0},
			{"switchboard_upstream_state", map[string]string{"server": "down", "state": "failed"}, 1},
			{"switchboard_upstream_reconnects_total", map[string]string{"server": "s"}, 1},
		} {
			if got, ok := value(families, tc.family, tc.labels); !ok || got != tc.want {
				t.Errorf("%s%v = %v (present: %v), want %v", tc.family, tc.labels, got, ok, tc.want)
			}
		}
		if got, ok := value(families, "switchboard_upstream_connect_failures_total", map[string]string{"server": "down"}); !ok || got < 1 {
			t.Errorf("connect failures of down = %v, want at least 1", got)
		}
		if got, ok := value(families, "switchboard_list_refreshes_total", map[string]string{"server": "s", "kind": "tools", "outcome": "ok"}); !ok || got < 2 {
			t.Errorf("tool list refreshes of s = %v, want at least 2 (connect and reconnect)", got)
		}
		for _, family := range []string{"go_goroutines", "process_cpu_seconds_total"} {
			if families[family] == nil && !strings.Contains(text, family) {
				t.Errorf("no %s: the runtime and process collectors are missing", family)
			}
		}
		if strings.Contains(text, secret) || strings.Contains(text, "example.invalid") {
			t.Error("the scrape shows a secret or a URL")
		}

		// A reconfiguration that removes a server removes its series, and
		// one that adds a server gives it its own.
		if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{cfg.Servers[0], {Name: "new", Command: "in-memory"}}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		families, text = scrape(t, x)
		if strings.Contains(text, `server="down"`) {
			t.Error("the removed server still has series")
		}
		if _, ok := value(families, "switchboard_upstream_state", map[string]string{"server": "new", "state": "failed"}); !ok {
			t.Error("the added server has no state series")
		}
		if got, _ := value(families, "switchboard_tool_calls_total", map[string]string{"server": "s", "tool": "s__echo", "outcome": "ok"}); got != 3 {
			t.Errorf("the untouched server's calls = %v after the reconfiguration, want 3", got)
		}
	})
}

// TestSkippedLines: every stdio server has a count of the stdout lines it
// skipped from the start, which a scrape brings up to date from its
// status; an http server has none.
func TestSkippedLines(t *testing.T) {
	x := New()
	cmd, args, env := mcptest.StdioCommand(mcptest.Script{GarbageOnStart: true, GarbageOnCall: true})
	m := switchboard.New(&config.Config{Servers: []config.Server{
		{Name: "noisy", Command: cmd, Args: args, Env: env},
		{Name: "web", URL: "http://127.0.0.1:1/mcp"},
	}}, &switchboard.Options{Cache: switchboard.CacheOff, StartupGate: -1})
	defer m.Close()
	defer x.Follow(m)()
	const family = "switchboard_upstream_stdout_skipped_lines_total"
	families, _ := scrape(t, x)
	if got, ok := value(families, family, map[string]string{"server": "noisy"}); !ok || got != 0 {
		t.Errorf("noisy's count before it started = %v (present: %v), want 0", got, ok)
	}
	if _, ok := value(families, family, map[string]string{"server": "web"}); ok {
		t.Error("an http server has a count of skipped stdout lines")
	}
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "noisy__echo"}); err != nil {
		t.Fatal(err)
	}
	families, _ = scrape(t, x)
	if got, _ := value(families, family, map[string]string{"server": "noisy"}); got != 2 {
		t.Errorf("noisy's count after its banner and a call = %v, want 2", got)
	}
}

// TestRemovedMidCall: a server removed while a call to it is in flight
// keeps no series when the call ends, and reading its latency creates none.
func TestRemovedMidCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "sleep", Behavior: mcptest.Sleep}}})
		defer srv.Close()
		x := New()
		cfg := &config.Config{Servers: []config.Server{{Name: "gone", Command: "in-memory"}, {Name: "stays", Command: "in-memory"}}}
		m := switchboard.New(cfg, &switchboard.Options{
			StartupGate: -1, Cache: switchboard.CacheOff, Observer: x.Observer(),
			Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) { return srv.ConnectInMemory(ctx) },
		})
		defer m.Close()
		defer x.Follow(m)()
		m.Connect(t.Context())
		ended := make(chan error, 1)
		go func() {
			_, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "gone__sleep", Arguments: map[string]any{"ms": 60_000}})
			ended <- err
		}()
		synctest.Wait()
		if got, _ := value(must(scrape(t, x)), "switchboard_calls_in_flight", map[string]string{"server": "gone"}); got != 1 {
			t.Fatalf("calls in flight to gone = %v, want 1", got)
		}
		if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: cfg.Servers[1:]}); err != nil {
			t.Fatal(err)
		}
		if err := <-ended; err == nil {
			t.Error("the call to the removed server succeeded")
		}
		synctest.Wait()
		if p50, p99, calls := x.Latency("gone"); p50 != 0 || p99 != 0 || calls != 0 {
			t.Errorf("latency of the removed server = %v, %v, %d", p50, p99, calls)
		}
		if _, text := scrape(t, x); strings.Contains(text, `server="gone"`) {
			t.Errorf("the server removed mid-call has series:\n%s", text)
		}
	})
}

// must returns families, dropping scrape's text.
func must(families map[string]*dto.MetricFamily, _ string) map[string]*dto.MetricFamily {
	return families
}

// TestLatencyQuantiles: the median and 99th percentile follow the calls'
// durations, within a bucket.
func TestLatencyQuantiles(t *testing.T) {
	x := New()
	if p50, p99, n := x.Latency("s"); p50 != 0 || p99 != 0 || n != 0 {
		t.Errorf("with no call: %v %v %d", p50, p99, n)
	}
	o := x.Observer()
	for i := range 100 {
		d := 10 * time.Millisecond
		if i == 99 {
			d = 3 * time.Second
		}
		o.CallEnded(switchboard.CallEnd{Server: "s", Tool: "s__t", Duration: d})
	}
	p50, p99, n := x.Latency("s")
	if n != 100 {
		t.Errorf("calls = %d, want 100", n)
	}
	if p50 < 8*time.Millisecond || p50 > 16*time.Millisecond {
		t.Errorf("p50 = %v, want about 10ms (its bucket: 8 to 16 ms)", p50)
	}
	if p99 < 8*time.Millisecond || p99 > 16*time.Millisecond {
		t.Errorf("p99 = %v, want within the 10ms bucket: 99 of 100 calls took 10ms", p99)
	}
	o.CallEnded(switchboard.CallEnd{Server: "s", Tool: "s__t", Duration: 3 * time.Second})
	if _, p99, _ := x.Latency("s"); p99 < 2*time.Second || p99 > 4100*time.Millisecond {
		t.Errorf("p99 with 2 slow calls in 101 = %v, want in the slow calls' bucket (2 to 4 s)", p99)
	}
}

// TestConfigReloads: reloads are counted by outcome, and the gauge says
// whether the last one applied all of the config.
func TestConfigReloads(t *testing.T) {
	x := New()
	families, _ := scrape(t, x)
	if got, ok := value(families, "switchboard_config_last_reload_successful", nil); !ok || got != 1 {
		t.Errorf("before any reload: %v (present: %v), want 1", got, ok)
	}
	for _, step := range []struct {
		outcome string
		want    float64
	}{{"refused", 0}, {"ok", 1}, {"rejected_entries", 0}} {
		x.ConfigReloaded(step.outcome)
		families, _ := scrape(t, x)
		if got, _ := value(families, "switchboard_config_last_reload_successful", nil); got != step.want {
			t.Errorf("after %s: last reload successful = %v, want %v", step.outcome, got, step.want)
		}
		if got, _ := value(families, "switchboard_config_reloads_total", map[string]string{"outcome": step.outcome}); got != 1 {
			t.Errorf("reloads with outcome %s = %v, want 1", step.outcome, got)
		}
	}
}

// TestSessionsDropped: the client sessions the gateway closed or refused
// are counted by reason.
func TestSessionsDropped(t *testing.T) {
	x := New()
	x.SessionDropped("notify_queue_full")
	x.SessionDropped("max_sessions")
	x.SessionDropped("max_sessions")
	families, _ := scrape(t, x)
	for reason, want := range map[string]float64{"notify_queue_full": 1, "max_sessions": 2} {
		if got, _ := value(families, "switchboard_gateway_sessions_dropped_total", map[string]string{"reason": reason}); got != want {
			t.Errorf("sessions dropped for %s = %v, want %v", reason, got, want)
		}
	}
}

// TestRateLimited: the requests the rate limits refused are counted by
// limit and server, and those decided locally while Redis is down.
func TestRateLimited(t *testing.T) {
	x := New()
	x.RateLimited("identity", "mem")
	x.RateLimited("identity", "mem")
	x.RateLimited("server", "ops")
	x.RateLimitLocalFallback()
	families, _ := scrape(t, x)
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"limit": "identity", "server": "mem"}, 2},
		{map[string]string{"limit": "server", "server": "ops"}, 1},
	} {
		if got, _ := value(families, "switchboard_rate_limited_total", c.labels); got != c.want {
			t.Errorf("rate limited %v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got, _ := value(families, "switchboard_rate_limit_local_fallback_total", nil); got != 1 {
		t.Errorf("local fallback = %v, want 1", got)
	}
}

// TestToolsHeldAndUnpinned: switchboard_tools_held counts a server's held
// tools (enforce), and switchboard_tools_unpinned its tools not as pinned,
// held or not (warn holds none); a server whose pinning is off has
// neither, and an approval brings both back to 0.
func TestToolsHeldAndUnpinned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tools := []mcptest.ToolSpec{{Name: "echo", Description: "Echoes."}, {Name: "same"}}
		ups := map[string]*mcptest.Server{}
		var cfg config.Config
		for _, name := range []string{"enforced", "warned", "off"} {
			ups[name] = mcptest.NewServer(mcptest.Script{Tools: tools})
			defer ups[name].Close()
			cfg.Servers = append(cfg.Servers, config.Server{Name: name, Command: "in-memory"})
		}
		cfg.Servers[1].Pinning, cfg.Servers[2].Pinning = config.PinningWarn, config.PinningOff
		x := New()
		m := switchboard.New(&cfg, &switchboard.Options{
			StartupGate: -1, Cache: switchboard.CacheOff, Observer: x.Observer(),
			Pinning: config.Pinning{Mode: config.PinningEnforce, File: t.TempDir() + "/pins.json"},
			Dial: func(ctx context.Context, s config.Server) (mcp.Transport, error) {
				return ups[s.Name].ConnectInMemory(ctx)
			},
		})
		defer m.Close()
		defer x.Follow(m)()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // pinned on first use
		check := func(when string, want map[string][2]float64) {
			t.Helper()
			families, _ := scrape(t, x)
			for _, server := range []string{"enforced", "warned", "off"} {
				held, hok := value(families, "switchboard_tools_held", map[string]string{"server": server})
				unpinned, uok := value(families, "switchboard_tools_unpinned", map[string]string{"server": server})
				w, ok := want[server]
				if hok != ok || uok != ok || held != w[0] || unpinned != w[1] {
					t.Errorf("%s, %s: held %v (present %v), unpinned %v (present %v); want %v (present %v)", when, server, held, hok, unpinned, uok, w, ok)
				}
			}
		}
		check("as pinned", map[string][2]float64{"enforced": {0, 0}, "warned": {0, 0}})
		changed := []mcptest.ToolSpec{{Name: "echo", Description: "Echoes, now better."}, {Name: "same"}, {Name: "extra"}}
		for _, srv := range ups {
			srv.SetTools(changed)
		}
		mcptest.PassTime(time.Second) // past the debounces of list_changed
		synctest.Wait()
		check("changed and new", map[string][2]float64{"enforced": {2, 2}, "warned": {0, 2}})
		if _, err := m.ApprovePins(t.Context(), "enforced", "warned/echo"); err != nil {
			t.Fatal(err)
		}
		check("approved", map[string][2]float64{"enforced": {0, 0}, "warned": {0, 1}})
	})
}
