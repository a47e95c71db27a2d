package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestStatusPage: /status shows each server's state, transport, tools,
// reconnects and latency, marks one in trouble, needs the token, and shows
// no URL and no secret.
func TestStatusPage(t *testing.T) {
	const token, secret = "st4tus", "planted-secret"
	t.Setenv("S", secret)
	down := config.Server{Name: "down", Type: config.HTTP, URL: "http://10.9.8.7:1/mcp?k=${S}", Headers: map[string]string{"X": "${S}"}}
	_, g := setup(t, upstreams{"up": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("up", true), down},
		&Options{AuthToken: token, Latency: func(server string) (time.Duration, time.Duration, uint64) {
			if server == "up" {
				return 12 * time.Millisecond, 900 * time.Millisecond, 7
			}
			return 0, 0, 0
		}})
	h := g.Handler()
	g.ConfigReloaded(errors.New("refused; the running config stays: mcp.json:2:3: bad"))
	if code, _ := get(t, h, "/status", nil); code != http.StatusUnauthorized {
		t.Errorf("/status without the token: %d", code)
	}
	code, page := get(t, h, "/status", http.Header{"Authorization": {"Bearer " + token}})
	if code != http.StatusOK {
		t.Fatalf("/status: %d", code)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<tr data-server="up" data-state="connected"><td>up</td><td><span class="state ok">connected</span></td><td>stdio</td><td class="n">6</td><td class="n">0</td><td class="n"></td><td class="n">7</td><td class="n">12ms</td><td class="n">900ms</td>`),
		regexp.MustCompile(`<tr data-server="down" data-state="failed">.*<span class="state bad">failed</span>.*<td class="n">-</td><td class="n">-</td><td class="err">server &#34;down&#34;: [^<]+</td>`),
		regexp.MustCompile(`<p id="reload">config reloaded at \d\d:\d\d:\d\d UTC: <span class="state bad">refused; the running config stays: mcp.json:2:3: bad</span></p>`),
		regexp.MustCompile(`<p id="summary">ready, some servers down · up `),
		regexp.MustCompile(`<meta http-equiv="refresh" content="5">`),
	} {
		if !want.MatchString(page) {
			t.Errorf("/status lacks %s\n%s", want, page)
		}
	}
	for _, leak := range []string{"10.9.8.7", secret, "k=", "http://", "https://", "<script", "<link"} {
		if strings.Contains(page, leak) {
			t.Errorf("/status shows %q", leak)
		}
	}

	// The same, as JSON, for switchboard status --gateway.
	code, body := get(t, h, "/status", http.Header{"Authorization": {"Bearer " + token}, "Accept": {"application/json"}})
	if code != http.StatusOK {
		t.Fatalf("/status as JSON: %d", code)
	}
	var report StatusReport
	if err := json.Unmarshal([]byte(body), &report); err != nil {
		t.Fatalf("/status as JSON: %v\n%s", err, body)
	}
	if len(report.Servers) != 2 || report.Summary != "ready, some servers down" {
		t.Fatalf("/status as JSON: %s", body)
	}
	up, down2 := report.Servers[0], report.Servers[1]
	if up.Name != "up" || up.State != "connected" || up.Tools != 6 || up.Calls != 7 || up.P50Seconds != 0.012 || up.P99Seconds != 0.9 {
		t.Errorf("/status as JSON, up: %+v", up)
	}
	if down2.Name != "down" || down2.State != "failed" || down2.Error == "" {
		t.Errorf("/status as JSON, down: %+v", down2)
	}
	if report.Reload == nil || report.Reload.Error != "refused; the running config stays: mcp.json:2:3: bad" || report.Reload.At.IsZero() {
		t.Errorf("/status as JSON, the last reload: %+v", report.Reload)
	}
	for _, leak := range []string{"10.9.8.7", secret, "k=", "http://", "https://"} {
		if strings.Contains(body, leak) {
			t.Errorf("/status as JSON shows %q", leak)
		}
	}
}

// TestStatusShowsCollisions: a resource URI that two servers offer is
// served by the one configured first; /status names the other's, on the
// page and in JSON.
func TestStatusShowsCollisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := []mcptest.ResourceSpec{{URI: "mem://shared", Name: "shared"}, {URI: "mem://also", Name: "also"}}
		a := mcptest.NewServer(mcptest.Script{Resources: shared})
		b := mcptest.NewServer(mcptest.Script{Resources: append(shared, mcptest.ResourceSpec{URI: "mem://b", Name: "b"})})
		_, g := setup(t, upstreams{"a": a, "b": b}, []config.Server{entry("a", false), entry("b", false)}, nil)
		synctest.Wait() // the resources are listed
		h := g.Handler()
		get := func(accept string) string { // in process: the bubble has no network
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/status", nil)
			req.Header.Set("Accept", accept)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Body.String()
		}

		page := get("text/html")
		want := `<ul id="collisions"><li data-server="b">b: <code>mem://also</code>, <code>mem://shared</code></li>`
		if !strings.Contains(page, want) || strings.Contains(page, `<li data-server="a">`) {
			t.Errorf("/status lacks %s\n%s", want, page)
		}
		body := get("application/json")
		var report StatusReport
		if err := json.Unmarshal([]byte(body), &report); err != nil {
			t.Fatalf("/status as JSON: %v\n%s", err, body)
		}
		got := map[string][]string{}
		for _, s := range report.Servers {
			got[s.Name] = s.Collisions
		}
		if diff := cmp.Diff(map[string][]string{"a": nil, "b": {"mem://also", "mem://shared"}}, got); diff != "" {
			t.Errorf("/status as JSON, collisions (-want +got):\n%s", diff)
		}
	})
}

// TestStatusShowsSkippedLines: a stdio server that printed a banner on
// stdout is connected, and /status shows the line it skipped.
func TestStatusShowsSkippedLines(t *testing.T) {
	command, args, env := mcptest.StdioCommand(mcptest.Script{GarbageOnStart: true})
	_, g := start(t, []config.Server{{Name: "noisy", Command: command, Args: args, Env: env}}, &switchboard.Options{Cache: switchboard.CacheOff}, nil)
	h := g.Handler()
	_, page := get(t, h, "/status", nil)
	if want := regexp.MustCompile(`<tr data-server="noisy" data-state="connected">.*<td>stdio<br><small class="skipped" [^>]*>skipped stdout lines: 1</small></td>`); !want.MatchString(page) {
		t.Errorf("/status lacks %s\n%s", want, page)
	}
	_, body := get(t, h, "/status", http.Header{"Accept": {"application/json"}})
	if !strings.Contains(body, `"skipped_lines":1`) {
		t.Errorf("/status as JSON lacks the skipped line:\n%s", body)
	}
}

// TestSkippedLinesOfProcessesPerSession: the lines that a server's
// processes of their own for client sessions skip count for the server.
func TestSkippedLinesOfProcessesPerSession(t *testing.T) {
	srv := config.Server{Name: "s", ProtocolVersion: legacy, ProcessPerSession: true}
	srv.Command, srv.Args, srv.Env = mcptest.StdioCommand(mcptest.Script{GarbageOnStart: true})
	m, g := start(t, []config.Server{srv}, &switchboard.Options{Cache: switchboard.CacheOff}, nil)
	for range 2 {
		cs := legacyClient(t, g, nil)
		if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__echo"}); err != nil || res.IsError {
			t.Fatalf("call: %v %v", res, err)
		}
	}
	if st := m.Status()[0]; st.SessionProcesses != 2 || st.SkippedLines != 3 {
		t.Errorf("status: %d processes per session, %d lines skipped; want 2 and 3 (the shared process's banner and theirs)", st.SessionProcesses, st.SkippedLines)
	}
}
