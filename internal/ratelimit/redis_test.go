package ratelimit

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/redistest"
)

// TestRedisReplicasLimitedAsOne: two limiters (replicas) that share a
// Redis share its buckets: a burst is spent across both; its keys are the
// hashed names, and expire.
func TestRedisReplicasLimitedAsOne(t *testing.T) {
	r := redistest.Start(t)
	limits := &config.GatewayLimits{
		PerIdentity: &config.RateLimit{Rate: 0.01, Burst: 4}, // no refill within the test
		Redis:       &config.LimitsRedis{URL: r.URL()},
	}
	a, b := newLimiter(t, limits, nil), newLimiter(t, limits, nil)
	ctx := t.Context()
	for i, l := range []*Limiter{a, b, a, b} {
		if got := l.Take(ctx, "alice", "memory"); got != nil {
			t.Fatalf("request %d of the burst: refused: %s", i+1, got.Message())
		}
	}
	for i, l := range []*Limiter{a, b} {
		got := l.Take(ctx, "alice", "memory")
		if got == nil || got.Limit != KindIdentity || got.RetryAfter < 99*time.Second || got.RetryAfter > 100*time.Second {
			t.Fatalf("replica %d after the shared burst: %+v; want refused, retry after about 100 s", i, got)
		}
	}
	if got := b.Take(ctx, "bob", "memory"); got != nil {
		t.Fatalf("bob: refused: %s", got.Message())
	}
	store := a.store.(*redisStore)
	key := keyOf(bucket{kind: KindIdentity, name: "alice"})
	if !strings.HasPrefix(key, "switchboard:ratelimit:identity:") || strings.Contains(key, "alice") {
		t.Errorf("key %q: want switchboard:ratelimit:identity: and a hash", key)
	}
	ttl, err := store.client.PTTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > 401*time.Second {
		t.Errorf("PTTL %s = %v, %v; want a TTL of at most the time to refill (400 s) and a second", key, ttl, err)
	}
}

// TestRedisFailsOpen: with Redis killed, requests go through, counted and
// logged once; restarted, the limits apply again, and that is logged.
func TestRedisFailsOpen(t *testing.T) {
	r := redistest.Start(t)
	var logs mcptest.LogBuffer
	failedOpen := 0
	l := newLimiter(t, &config.GatewayLimits{
		PerIdentity: &config.RateLimit{Rate: 0.01, Burst: 1},
		Redis:       &config.LimitsRedis{URL: r.URL()},
	}, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Recheck: -1, FailedOpen: func() { failedOpen++ }})
	ctx := t.Context()
	if l.Take(ctx, "alice", "s") != nil || l.Take(ctx, "alice", "s") == nil {
		t.Fatal("want one request through, then refused")
	}
	r.Stop(t)
	for i := range 3 {
		if got := l.Take(ctx, "alice", "s"); got != nil {
			t.Fatalf("request %d with Redis down: refused: %s", i+1, got.Message())
		}
	}
	if failedOpen != 3 || strings.Count(logs.String(), "fail open") != 1 {
		t.Fatalf("FailedOpen called %d times, logs %q; want 3 and one warning", failedOpen, logs.String())
	}
	r.Restart(t) // empty: alice has her burst again
	if l.Take(ctx, "alice", "s") != nil || l.Take(ctx, "alice", "s") == nil {
		t.Fatal("after the restart: want one request through, then refused")
	}
	if !strings.Contains(logs.String(), "redis answers again") {
		t.Errorf("no log of the recovery: %q", logs.String())
	}
}

// TestRedisRecheck: after a failure, requests go through without asking
// Redis until Recheck has passed.
func TestRedisRecheck(t *testing.T) {
	r := redistest.Start(t)
	l := newLimiter(t, &config.GatewayLimits{
		PerIdentity: &config.RateLimit{Rate: 0.01, Burst: 1},
		Redis:       &config.LimitsRedis{URL: r.URL()},
	}, &Options{Recheck: time.Hour})
	ctx := t.Context()
	r.Stop(t)
	_ = l.Take(ctx, "alice", "s")
	r.Restart(t)
	for range 3 {
		if got := l.Take(ctx, "alice", "s"); got != nil {
			t.Fatal("asked Redis within Recheck of its failure")
		}
	}
	if n, _ := l.store.(*redisStore).client.Exists(ctx, keyOf(bucket{kind: KindIdentity, name: "alice"})).Result(); n != 0 {
		t.Error("a bucket was written within Recheck of the failure")
	}
}
