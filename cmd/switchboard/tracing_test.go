package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// otelVars are the variables that decide on tracing: each test starts
// with none of them.
var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_BSP_SCHEDULE_DELAY"}

func clearOtel(t *testing.T) {
	for _, name := range otelVars {
		t.Setenv(name, "")
	}
}

func TestTracingWanted(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "gw", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false},
	} {
		if got := tracingWanted(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("tracingWanted(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// TestStartTracingOff creates nothing when no variable asks for traces.
func TestStartTracingOff(t *testing.T) {
	clearOtel(t)
	tp, flush, err := startTracing(t.Context(), false, slog.New(slog.DiscardHandler))
	if err != nil || tp != nil {
		t.Fatalf("startTracing = %v, %v; want no provider", tp, err)
	}
	flush()
}

// TestStartTracingBadSettings refuses a bad setting with an error that
// names its variable.
func TestStartTracingBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		stdio bool
		want  string
	}{
		{"exporter", map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, false, `OTEL_TRACES_EXPORTER="jaeger"`},
		{"protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, `OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`},
		{"traces protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"}, false, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="udp"`},
		{"console on stdio", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true, `OTEL_TRACES_EXPORTER "console" (standard output) and --stdio exclude each other`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOtel(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, _, err := startTracing(t.Context(), tc.stdio, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("startTracing = %v; want an error with %s", err, tc.want)
			}
		})
	}
}

// collector is an OTLP/HTTP collector that keeps the spans it receives.
type collector struct {
	mu       sync.Mutex
	spans    []string // "service.name span-name"
	requests []string // "METHOD path"
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	c.mu.Lock()
	c.requests = append(c.requests, r.Method+" "+r.URL.Path)
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, service+" "+s.GetName())
			}
		}
	}
	c.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(out)
}

// TestServeExportsTraces runs serve with OTLP over http/protobuf to a local
// collector, with a batch delay far longer than the test: the spans of a
// call arrive at /v1/traces when the gateway shuts down, under the default
// service name.
func TestServeExportsTraces(t *testing.T) {
	isolate(t)
	clearOtel(t)
	c := &collector{}
	hs := httptest.NewServer(c)
	defer hs.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hs.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // an hour: only the shutdown exports
	cfg := writeConfig(t, map[string]mcptest.Script{"m": {}}, nil)
	g := startServe(t, "--config", cfg)
	g.waitLog(t, settledRE)
	cs := connectHTTP(t, g.url)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	c.mu.Lock()
	early := len(c.requests)
	c.mu.Unlock()
	if err := g.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit: %v\n%s", err, g.log)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if early != 0 {
		t.Errorf("%d exports before the shutdown, want none: the batch delay is an hour", early)
	}
	for _, r := range c.requests {
		if r != "POST /v1/traces" {
			t.Errorf("collector got %s, want POST /v1/traces", r)
		}
	}
	for _, want := range []string{"switchboard tools/call m__echo", "switchboard tools/call echo"} {
		if !strings.Contains(strings.Join(c.spans, "\n"), want) {
			t.Errorf("spans received: %q; want %q", c.spans, want)
		}
	}
}
