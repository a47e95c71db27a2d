package ratelimit

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func newLimiter(t *testing.T, limits *config.GatewayLimits, o *Options) *Limiter {
	t.Helper()
	l, err := New(limits, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestBurstThenRefill: an identity gets its burst at once, then a token
// every 1/rate; the refusal says when the next one comes, and a bucket
// never holds more than its burst.
func TestBurstThenRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 2, Burst: 3}}, nil)
		ctx := t.Context()
		for i := range 3 {
			if r := l.Take(ctx, "alice", "memory"); r != nil {
				t.Fatalf("request %d of the burst: refused: %s", i+1, r.Message())
			}
		}
		r := l.Take(ctx, "alice", "memory")
		if r == nil || r.Limit != KindIdentity || r.RetryAfter != 500*time.Millisecond {
			t.Fatalf("after the burst: %+v; want refused by the identity limit, retry after 500ms", r)
		}
		if want := "switchboard: rate limited: identity limit of 2 requests/s; retry after 0.5 s"; r.Message() != want {
			t.Errorf("Message = %q, want %q", r.Message(), want)
		}
		mcptest.PassTime(200 * time.Millisecond)
		if r := l.Take(ctx, "alice", "memory"); r == nil || r.RetryAfter != 300*time.Millisecond {
			t.Fatalf("200ms later: %+v; want retry after 300ms", r)
		}
		mcptest.PassTime(300 * time.Millisecond)
		if r := l.Take(ctx, "alice", "memory"); r != nil {
			t.Fatalf("after retry-after: refused: %s", r.Message())
		}
		mcptest.PassTime(time.Hour) // refills to the burst, not beyond
		for i := range 3 {
			if r := l.Take(ctx, "alice", "memory"); r != nil {
				t.Fatalf("request %d after an hour: refused", i+1)
			}
		}
		if r := l.Take(ctx, "alice", "memory"); r == nil {
			t.Fatal("a fourth request after an hour went through: the bucket held more than its burst")
		}
	})
}

// TestIdentitiesApart: one identity's empty bucket leaves another's full.
func TestIdentitiesApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 1, Burst: 1}}, nil)
		if l.Take(t.Context(), "alice", "a") != nil || l.Take(t.Context(), "alice", "b") == nil {
			t.Fatal("alice: want one request through, across servers, then refused")
		}
		if r := l.Take(t.Context(), "bob", "a"); r != nil {
			t.Fatalf("bob refused after alice's flood: %s", r.Message())
		}
	})
}

// TestPerServer: a server's bucket is shared by every identity; another
// server, and a server with its own limit, are apart; the message names
// the server; a request refused by one bucket takes no token of the other.
func TestPerServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var limited []string
		l := newLimiter(t, &config.GatewayLimits{
			PerIdentity: &config.RateLimit{Rate: 1, Burst: 2},
			PerServer:   &config.ServerLimits{Default: config.RateLimit{Rate: 1, Burst: 1}, Servers: map[string]config.RateLimit{"big": {Rate: 10, Burst: 10}}},
		}, &Options{Limited: func(limit, server string) { limited = append(limited, limit+"/"+server) }})
		ctx := t.Context()
		if r := l.Take(ctx, "alice", "memory"); r != nil {
			t.Fatalf("first: %s", r.Message())
		}
		r := l.Take(ctx, "bob", "memory")
		if r == nil || r.Limit != KindServer || r.RetryAfter != time.Second {
			t.Fatalf("bob on memory after alice: %+v; want refused by the server limit", r)
		}
		if want := `switchboard: rate limited: server "memory" limit of 1 requests/s; retry after 1.0 s`; r.Message() != want {
			t.Errorf("Message = %q, want %q", r.Message(), want)
		}
		// bob's refused request took none of his tokens: two more pass.
		if l.Take(ctx, "bob", "big") != nil || l.Take(ctx, "bob", "other") != nil {
			t.Fatal("bob on other servers: refused")
		}
		if diff := fmt.Sprint(limited); diff != "[server/memory]" {
			t.Errorf("Limited calls = %s, want [server/memory]", diff)
		}
	})
}

// TestSetReloads: Set replaces the limits for the requests that follow.
func TestSetReloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 1, Burst: 1}}, nil)
		_ = l.Take(t.Context(), "alice", "a")
		if l.Take(t.Context(), "alice", "a") == nil {
			t.Fatal("not limited")
		}
		l.Set(&config.GatewayLimits{})
		if r := l.Take(t.Context(), "alice", "a"); r != nil {
			t.Fatalf("after Set without limits: refused: %s", r.Message())
		}
	})
}

// TestMaxBuckets: past MaxBuckets, a bucket that is full again goes first;
// else the least recently used, and that is logged.
func TestMaxBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		l := newLimiter(t, &config.GatewayLimits{PerIdentity: &config.RateLimit{Rate: 1, Burst: 1}},
			&Options{MaxBuckets: 3, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		ctx := context.Background()
		m := l.store.(*memory)
		for _, id := range []string{"a", "b", "c"} {
			_ = l.Take(ctx, id, "s")
		}
		mcptest.PassTime(2 * time.Second) // all full again
		_ = l.Take(ctx, "b", "s")
		_ = l.Take(ctx, "c", "s")
		_ = l.Take(ctx, "d", "s") // evicts a, full: not logged
		if len(m.buckets) != 3 || logs.Len() != 0 {
			t.Fatalf("%d buckets, logs %q; want 3, none", len(m.buckets), logs.String())
		}
		if _, ok := m.buckets[bucketKey{KindIdentity, "a"}]; ok {
			t.Error("a, full again, was kept")
		}
		_ = l.Take(ctx, "e", "s") // evicts b, empty: logged
		if _, ok := m.buckets[bucketKey{KindIdentity, "b"}]; ok || !strings.Contains(logs.String(), "MaxBuckets") {
			t.Errorf("b kept (%v) or no log naming MaxBuckets: %q", ok, logs.String())
		}
	})
}
