// Package ratelimit is the gateway's rate limits: token buckets per
// identity and per server, held in memory or, to be shared by replicas, in
// Redis.
package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
)

// Kinds of limit, as Refusal.Limit and the metric name them.
const (
	KindIdentity = "identity"
	KindServer   = "server"
)

// A Refusal says which limit refused a request, and when to retry.
type Refusal struct {
	Limit      string // KindIdentity or KindServer
	Server     string // the request's server
	Rate       float64
	RetryAfter time.Duration
}

// MessagePrefix begins every refusal's Message.
const MessagePrefix = "switchboard: rate limited: "

// Message is the refusal as a client reads it: the limit, never whose.
func (r *Refusal) Message() string {
	which := "identity limit"
	if r.Limit == KindServer {
		which = fmt.Sprintf("server %q limit", r.Server)
	}
	return fmt.Sprintf(MessagePrefix+"%s of %s requests/s; retry after %.1f s",
		which, formatRate(r.Rate), r.RetryAfter.Seconds())
}

func formatRate(r float64) string { return fmt.Sprintf("%g", r) }

// A bucket is one token bucket a request takes a token from.
type bucket struct {
	kind, name string // name: the identity's subject or the server's name
	limit      config.RateLimit
}

// store holds the buckets.
type store interface {
	// take takes a token from each of bs, or, if one of them has none,
	// from none: it returns the index of the one that refuses longest, and
	// when it will have a token; -1 if it took.
	take(ctx context.Context, bs []bucket) (refused int, retryAfter time.Duration, err error)
	close() error
}

// Options configure a [Limiter].
type Options struct {
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// Password is Redis's password, if the config names one.
	Password string
	// Limited, if set, is called for each request refused, with the kind
	// of limit and the server: for a metric. It must not block.
	Limited func(limit, server string)
	// LocalFallback, if set, is called for each request that this
	// process's own buckets decided because Redis did not answer (or no
	// connection to it was free within RedisPoolTimeout). It must not
	// block.
	LocalFallback func()
	// Recheck is how long after Redis failed requests are decided by this
	// process's buckets without asking it again. Default RedisRecheck;
	// negative: ask every time.
	Recheck time.Duration
	// MaxBuckets bounds the buckets held in memory. Default MaxBuckets.
	MaxBuckets int
}

// Limiter applies the config's gateway.limits. Its methods are safe for
// concurrent use.
type Limiter struct {
	opts   Options
	store  store
	local  *memory // with Redis: the buckets that decide when it fails
	limits atomic.Pointer[config.GatewayLimits]
}

// New returns a Limiter for limits, which must not be nil: in memory, or in
// the Redis that limits.Redis names (New does not connect; the first
// request does). The caller closes it.
func New(limits *config.GatewayLimits, o *Options) (*Limiter, error) {
	l := &Limiter{}
	if o != nil {
		l.opts = *o
	}
	if l.opts.Logger == nil {
		l.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if l.opts.Recheck == 0 {
		l.opts.Recheck = RedisRecheck
	}
	if l.opts.MaxBuckets <= 0 {
		l.opts.MaxBuckets = MaxBuckets
	}
	if limits.Redis != nil {
		s, err := newRedisStore(limits.Redis, &l.opts)
		if err != nil {
			return nil, err
		}
		l.store = s
		l.local = newMemory(l.opts.MaxBuckets, l.opts.Logger)
	} else {
		l.store = newMemory(l.opts.MaxBuckets, l.opts.Logger)
	}
	l.limits.Store(limits)
	return l, nil
}

// Set replaces the limits, as a reloaded config has them, for the requests
// that follow; the buckets keep their tokens (up to a new burst). Their
// store stays: a changed Redis setting applies from the next New.
func (l *Limiter) Set(limits *config.GatewayLimits) {
	if limits == nil {
		limits = &config.GatewayLimits{}
	}
	l.limits.Store(limits)
}

// Close releases the store's connections.
func (l *Limiter) Close() error { return l.store.close() }

// Take takes a token for a request of subject ("" for the one shared
// identity without authentication) that would reach server: nil if it may
// go on, else what refused it. While Redis does not answer, and for a
// request that found no free connection to it, this process's own buckets
// decide, with the same limits: each replica then allows up to the limit
// by itself, so N replicas allow up to N times the limit.
func (l *Limiter) Take(ctx context.Context, subject, server string) *Refusal {
	limits := l.limits.Load()
	bs := make([]bucket, 0, 2)
	if r := limits.PerIdentity; r != nil {
		bs = append(bs, bucket{KindIdentity, subject, *r})
	}
	if r, ok := limits.PerServer.For(server); ok {
		bs = append(bs, bucket{KindServer, server, r})
	}
	if len(bs) == 0 {
		return nil
	}
	i, wait, err := l.store.take(ctx, bs)
	if err != nil {
		if l.opts.LocalFallback != nil {
			l.opts.LocalFallback()
		}
		i, wait, _ = l.local.take(ctx, bs) // in memory: no error
	}
	if i < 0 {
		return nil
	}
	if l.opts.Limited != nil {
		l.opts.Limited(bs[i].kind, server)
	}
	return &Refusal{Limit: bs[i].kind, Server: server, Rate: bs[i].limit.Rate, RetryAfter: wait}
}

// keyOf is a bucket's Redis key: the identity's subject or the server's
// name, hashed, so that the key holds no personal data and no client
// chooses its length.
func keyOf(b bucket) string {
	sum := sha256.Sum256([]byte(b.name))
	return "switchboard:ratelimit:" + b.kind + ":" + hex.EncodeToString(sum[:16])
}
