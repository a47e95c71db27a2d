package main

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestLoadThroughTheProxy: the load generator's sessions, closed loop and
// at a fixed rate, through the minimal proxy to the echo upstream, get
// every reply checked, and a reply that is not the text sent is an error.
func TestLoadThroughTheProxy(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	upstream, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		if err := serveUpstream(ctx, upstream, false); err != nil {
			t.Error(err)
		}
	})
	if err := waitListening(ctx, upstream, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		if err := serveProxy(ctx, proxy, "http://"+upstream+"/mcp", nil); err != nil {
			t.Error(err)
		}
	})
	c, err := connectClients(ctx, "http://"+proxy+"/mcp", "echo", 4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	closed := c.closedLoop(ctx, 0, 200*time.Millisecond)
	if closed.errs != 0 || closed.calls == 0 || len(closed.latencies) != closed.calls {
		t.Errorf("closed loop: %d calls, %d errors (%v)", closed.calls, closed.errs, closed.firstErr)
	}
	fixed := c.fixedRate(ctx, 100, 0, 200*time.Millisecond)
	if fixed.errs != 0 || fixed.calls < 10 || fixed.calls > 30 {
		t.Errorf("fixed rate of 100/s for 200ms: %d calls, %d errors (%v)", fixed.calls, fixed.errs, fixed.firstErr)
	}
	if fixed.quantile(0.5) > fixed.quantile(0.99) || fixed.quantile(0.99) <= 0 {
		t.Errorf("quantiles: p50 %v, p99 %v", fixed.quantile(0.5), fixed.quantile(0.99))
	}

	if payload(0, 1) == payload(1, 0) || len(payload(3, 7)) != 1024 {
		t.Error("payloads do not name their session and call")
	}
}

// TestWrongReplyIsAnError: a reply that is not the text sent fails the call.
func TestWrongReplyIsAnError(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "liar", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: payload(0, 0)}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	c := &clients{tool: "echo", sessions: []*mcp.ClientSession{cs}}
	if err := c.call(t.Context(), 0, 0); err != nil {
		t.Errorf("the right reply: %v", err)
	}
	if err := c.call(t.Context(), 0, 1); err == nil {
		t.Error("a reply with another call's text passed")
	}
	r := c.closedLoop(t.Context(), 0, 50*time.Millisecond)
	if r.errs == 0 || r.firstErr == nil {
		t.Errorf("closed loop against a wrong echo: %d errors", r.errs)
	}
}

// TestProcessFigures: this process's CPU time and peak RSS read from /proc.
func TestProcessFigures(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cpu, err := cpuTime(os.Getpid())
	if err != nil || cpu < 0 {
		t.Errorf("cpuTime: %v, %v", cpu, err)
	}
	rss, err := peakRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Errorf("peakRSS: %d, %v", rss, err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
