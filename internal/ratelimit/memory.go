package ratelimit

import (
	"container/list"
	"context"
	"log/slog"
	"math"
	"sync"
	"time"
)

// MaxBuckets bounds the token buckets a gateway holds in memory, per
// identity and per server: identities are as many as an authorization
// server issues subjects. At the bound, the bucket used least recently
// goes; if it was not full again (its identity was active within the time
// it takes to refill), its identity starts over with a full bucket, and
// that is logged.
const MaxBuckets = 10000

// memory holds token buckets in this process, by kind and name, in the
// order they were last used.
type memory struct {
	max    int
	logger *slog.Logger

	mu      sync.Mutex
	buckets map[bucketKey]*list.Element // of *tokens
	lru     list.List                   // most recently used first
	warned  time.Time                   // when the bound was last logged
}

type bucketKey struct{ kind, name string }

// tokens is the state of one bucket: n tokens at time at.
type tokens struct {
	key bucketKey
	n   float64
	at  time.Time
	max float64 // the bucket's burst, as last used
	per float64 // its rate, as last used
}

func newMemory(max int, logger *slog.Logger) *memory {
	return &memory{max: max, logger: logger, buckets: make(map[bucketKey]*list.Element)}
}

func (m *memory) take(_ context.Context, bs []bucket) (int, time.Duration, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	held := make([]*tokens, len(bs))
	refused, longest := -1, time.Duration(0)
	for i, b := range bs {
		t := m.getLocked(bucketKey{b.kind, b.name}, b, now)
		held[i] = t
		if t.n < 1 {
			if wait := retryAfter(t.n, b.limit.Rate); wait > longest || refused < 0 {
				refused, longest = i, wait
			}
		}
	}
	if refused >= 0 {
		return refused, longest, nil
	}
	for _, t := range held {
		t.n--
	}
	return -1, 0, nil
}

// getLocked returns the bucket of key, filled up to now, creating a full
// one if there is none: the one it evicts, at the bound, is the one used
// least recently.
func (m *memory) getLocked(key bucketKey, b bucket, now time.Time) *tokens {
	burst, rate := float64(b.limit.Burst), b.limit.Rate
	if e, ok := m.buckets[key]; ok {
		m.lru.MoveToFront(e)
		t := e.Value.(*tokens)
		t.n = min(burst, t.n+now.Sub(t.at).Seconds()*rate)
		t.at, t.max, t.per = now, burst, rate
		return t
	}
	if len(m.buckets) >= m.max {
		m.evictLocked(now)
	}
	t := &tokens{key: key, n: burst, at: now, max: burst, per: rate}
	m.buckets[key] = m.lru.PushFront(t)
	return t
}

// evictScan is how many of the least recently used buckets evictLocked
// looks at for one that is full again.
const evictScan = 16

// evictLocked drops a bucket: one that is full again (the same as none),
// among the least recently used, else the least recently used, which is
// logged.
func (m *memory) evictLocked(now time.Time) {
	full := func(t *tokens) bool { return t.n+now.Sub(t.at).Seconds()*t.per >= t.max }
	victim := m.lru.Back()
	for e, i := victim, 0; e != nil && i < evictScan; e, i = e.Prev(), i+1 {
		if full(e.Value.(*tokens)) {
			victim = e
			break
		}
	}
	t := victim.Value.(*tokens)
	if !full(t) && now.Sub(m.warned) >= time.Minute {
		m.warned = now
		m.logger.Warn("rate limits: the gateway holds its limit of token buckets; an identity active lately starts over with a full bucket", "limit", "MaxBuckets", "buckets", m.max)
	}
	m.lru.Remove(victim)
	delete(m.buckets, t.key)
}

// retryAfter is how long a bucket with n < 1 tokens, filling at rate a
// second, takes to hold one, in whole milliseconds rounded up, as Redis
// answers it.
func retryAfter(n, rate float64) time.Duration {
	return time.Duration(math.Ceil((1-n)/rate*1000)) * time.Millisecond
}

func (m *memory) close() error { return nil }
