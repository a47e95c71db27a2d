package ratelimit

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// TestRedisDownLimitsLocally: with Redis killed, this replica's own
// buckets decide, with the same limits (an identity's burst still holds),
// counted and logged once; restarted, Redis decides again, and that is
// logged.
func TestRedisDownLimitsLocally(t *testing.T) {
	r := redistest.Start(t)
	var logs mcptest.LogBuffer
	fallbacks := 0
	l := newLimiter(t, &config.GatewayLimits{
		PerIdentity: &config.RateLimit{Rate: 0.01, Burst: 2},
		Redis:       &config.LimitsRedis{URL: r.URL()},
	}, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Recheck: -1, LocalFallback: func() { fallbacks++ }})
	ctx := t.Context()
	takeBurst(t, l, "alice", 2, "with Redis up")
	r.Stop(t)
	for i := range 2 {
		if got := l.Take(ctx, "alice", "s"); got != nil {
			t.Fatalf("request %d of the local burst with Redis down: refused: %s", i+1, got.Message())
		}
	}
	got := l.Take(ctx, "alice", "s")
	if got == nil || got.Limit != KindIdentity || got.RetryAfter < 99*time.Second || got.RetryAfter > 100*time.Second {
		t.Fatalf("after the local burst with Redis down: %+v; want refused, retry after about 100 s", got)
	}
	if l.Take(ctx, "bob", "s") != nil {
		t.Fatal("bob refused with Redis down: his local bucket is his own")
	}
	if fallbacks != 4 || strings.Count(logs.String(), "local fallback") != 1 {
		t.Fatalf("LocalFallback called %d times, logs %q; want 4 and one warning", fallbacks, logs.String())
	}
	r.Restart(t) // empty: alice has her burst again
	takeBurst(t, l, "alice", 2, "after the restart")
	if fallbacks != 4 {
		t.Errorf("LocalFallback called %d times after the restart; want still 4", fallbacks)
	}
	if !strings.Contains(logs.String(), "redis answers again") {
		t.Errorf("no log of the recovery: %q", logs.String())
	}
}

// takeBurst takes n requests of subject through l, then wants one refused.
func takeBurst(t *testing.T, l *Limiter, subject string, n int, when string) {
	t.Helper()
	for i := range n {
		if got := l.Take(t.Context(), subject, "s"); got != nil {
			t.Fatalf("%s: request %d of %d: refused: %s", when, i+1, n, got.Message())
		}
	}
	if l.Take(t.Context(), subject, "s") == nil {
		t.Fatalf("%s: request %d went through; want refused after the burst of %d", when, n+1, n)
	}
}

// TestRedisRecheck: after a failure, this replica's buckets decide without
// asking Redis until Recheck has passed.
func TestRedisRecheck(t *testing.T) {
	r := redistest.Start(t)
	l := newLimiter(t, &config.GatewayLimits{
		PerIdentity: &config.RateLimit{Rate: 0.01, Burst: 1},
		Redis:       &config.LimitsRedis{URL: r.URL()},
	}, &Options{Recheck: time.Hour})
	ctx := t.Context()
	r.Stop(t)
	if got := l.Take(ctx, "alice", "s"); got != nil {
		t.Fatalf("first request with Redis down: refused: %s", got.Message())
	}
	r.Restart(t)
	for range 3 {
		if got := l.Take(ctx, "alice", "s"); got == nil {
			t.Fatal("a request within Recheck of the failure went through: want refused by the local bucket")
		}
	}
	if n, _ := l.store.(*redisStore).client.Exists(ctx, keyOf(bucket{kind: KindIdentity, name: "alice"})).Result(); n != 0 {
		t.Error("a bucket was written within Recheck of the failure")
	}
}

// TestRedisPoolBusy: a request that finds no free connection to Redis
// within the pool's timeout is decided by the local buckets, but Redis is
// not taken as down: the next request asks it, and nothing is logged as an
// outage.
func TestRedisPoolBusy(t *testing.T) {
	r := redistest.Start(t)
	var logs mcptest.LogBuffer
	fallbacks := 0
	l := newLimiter(t, &config.GatewayLimits{
		PerIdentity: &config.RateLimit{Rate: 0.01, Burst: 1},
		Redis:       &config.LimitsRedis{URL: r.URL()},
	}, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Recheck: time.Hour, LocalFallback: func() { fallbacks++ }})
	store := l.store.(*redisStore)
	o, err := redisOptions(&config.LimitsRedis{URL: r.URL()}, &l.opts)
	if err != nil {
		t.Fatal(err)
	}
	o.PoolSize, o.PoolTimeout = 1, time.Millisecond // well within RedisTimeout, under -race too
	if err := store.client.Close(); err != nil {
		t.Fatal(err)
	}
	store.client = redis.NewClient(o)
	ctx := t.Context()
	if l.Take(ctx, "alice", "s") != nil || l.Take(ctx, "alice", "s") == nil {
		t.Fatal("want one request through Redis, then refused")
	}

	busy := store.client.Conn() // holds the one connection until closed
	if err := busy.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := l.Take(ctx, "alice", "s"); got != nil {
		t.Fatalf("first request with the pool busy: refused: %s; want through by the local bucket", got.Message())
	}
	if got := l.Take(ctx, "alice", "s"); got == nil {
		t.Fatal("second request with the pool busy: through; want refused by the local bucket")
	}
	if err := busy.Close(); err != nil {
		t.Fatal(err)
	}
	if fallbacks != 2 {
		t.Errorf("LocalFallback called %d times; want 2", fallbacks)
	}
	// Recheck is an hour: had the busy pool counted as Redis down, the
	// local bucket would decide this one too, and keep bob's burst.
	if got := l.Take(ctx, "bob", "s"); got != nil {
		t.Fatalf("bob after the pool freed: refused: %s", got.Message())
	}
	if n, _ := store.client.Exists(ctx, keyOf(bucket{kind: KindIdentity, name: "bob"})).Result(); n != 1 {
		t.Error("bob's request after the pool freed did not ask Redis")
	}
	if fallbacks != 2 || strings.Contains(logs.String(), "local fallback") || !strings.Contains(logs.String(), "RedisPoolTimeout") {
		t.Errorf("LocalFallback called %d times, logs %q; want 2, no outage, the busy pool logged", fallbacks, logs.String())
	}
}
