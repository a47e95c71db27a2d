package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/switchboard-mcp/switchboard/config"
)

// RedisTimeout bounds each round trip to Redis, dialling and the wait for
// a connection included: a request waits at most this long for Redis
// before this replica's own buckets decide it.
const RedisTimeout = 100 * time.Millisecond

// RedisPoolTimeout bounds a request's wait for a free connection to Redis
// when all of them are busy, within RedisTimeout. A request that waited
// this long is decided by this replica's own buckets, but Redis is not
// taken as down: the requests that follow still ask it.
const RedisPoolTimeout = RedisTimeout / 2

// RedisRecheck is how long, after Redis failed to answer, this replica's
// own buckets decide requests without asking it; the first request after
// asks again.
const RedisRecheck = time.Second

// takeScript takes a token from each bucket of KEYS, or from none, by
// Redis's clock, so that the replicas' clocks do not matter. ARGV holds
// each bucket's rate (tokens a second) and burst, in turn. A bucket is a
// hash of its tokens and the time, in microseconds, they were counted; it
// expires once it would be full again, which is the same as no bucket.
// The answer is {0, 0} if it took, else {i, ms}: the 1-based index of the
// bucket that refuses longest, and the milliseconds until it has a token.
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local held = {}
local worst, wait = 0, 0
for i = 1, #KEYS do
  local rate, burst = tonumber(ARGV[2*i-1]), tonumber(ARGV[2*i])
  local s = redis.call('HMGET', KEYS[i], 'n', 'at')
  local n, at = tonumber(s[1]), tonumber(s[2])
  if n == nil or at == nil then
    n, at = burst, now
  end
  if now > at then
    n = n + (now - at) / 1000000 * rate
  end
  n = math.min(burst, n)
  held[i] = n
  if n < 1 then
    local w = math.ceil((1 - n) / rate * 1000)
    if worst == 0 or w > wait then
      worst, wait = i, w
    end
  end
end
if worst > 0 then
  return {worst, wait}
end
for i = 1, #KEYS do
  local rate, burst = tonumber(ARGV[2*i-1]), tonumber(ARGV[2*i])
  redis.call('HSET', KEYS[i], 'n', string.format('%.17g', held[i] - 1), 'at', string.format('%d', now))
  redis.call('PEXPIRE', KEYS[i], math.ceil(burst / rate * 1000) + 1000)
end
return {0, 0}
`)

// redisStore holds the buckets in Redis, shared by every gateway that uses
// the same one. When it fails, the Limiter falls back to its own buckets.
type redisStore struct {
	client *redis.Client
	opts   *Options

	mu         sync.Mutex
	downUntil  time.Time // while Redis is taken as down: it is not asked
	down       bool      // Redis failed its last round trip
	warned     time.Time // when its failure was last logged
	warnedPool time.Time // when a wait for a connection was last logged
}

func newRedisStore(cfg *config.LimitsRedis, o *Options) (*redisStore, error) {
	opts, err := redisOptions(cfg, o)
	if err != nil {
		return nil, err
	}
	quietRedis.Do(func() { redis.SetLogger(discardLogging{}) })
	return &redisStore{client: redis.NewClient(opts), opts: o}, nil
}

// quietRedis drops go-redis's own log lines, process-wide (its logger is
// global): it writes each failed dial to stderr, outside the host's
// logger, while the store logs an outage once, with its cause.
var quietRedis sync.Once

type discardLogging struct{}

func (discardLogging) Printf(context.Context, string, ...any) {}

// redisOptions are the client's options for cfg: every wait bounded by
// RedisTimeout, and no retries.
func redisOptions(cfg *config.LimitsRedis, o *Options) (*redis.Options, error) {
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		// Its error may quote the URL: say less.
		return nil, errors.New("gateway.limits.redis.url: not a Redis URL")
	}
	opts.Password = o.Password
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = RedisTimeout, RedisTimeout, RedisTimeout
	opts.PoolTimeout = RedisPoolTimeout
	opts.MaxRetries = -1   // a retry would outlast RedisTimeout; the next request asks again
	opts.DialerRetries = 1 // likewise
	opts.ContextTimeoutEnabled = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opts.DisableIdentity = true // no CLIENT SETINFO: older servers refuse it
	return opts, nil
}

func (s *redisStore) take(ctx context.Context, bs []bucket) (int, time.Duration, error) {
	now := time.Now()
	s.mu.Lock()
	skip := s.down && now.Before(s.downUntil)
	s.mu.Unlock()
	if skip {
		return -1, 0, errRedisDown
	}
	keys := make([]string, len(bs))
	args := make([]any, 0, 2*len(bs))
	for i, b := range bs {
		keys[i] = keyOf(b)
		args = append(args, strconv.FormatFloat(b.limit.Rate, 'g', -1, 64), b.limit.Burst)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RedisTimeout)
	defer cancel()
	res, err := takeScript.Run(ctx, s.client, keys, args...).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("the script answered %d values, want 2", len(res))
	}
	s.answered(err)
	if err != nil {
		return -1, 0, err
	}
	if res[0] == 0 {
		return -1, 0, nil
	}
	return int(res[0] - 1), time.Duration(res[1]) * time.Millisecond, nil
}

// errRedisDown is the error of a request not asked of Redis, which failed
// lately.
var errRedisDown = errors.New("redis did not answer lately")

// answered records whether Redis answered (err nil), and logs when that
// changes: at most a warning a minute for its failures. A wait for a
// connection that timed out is no failure of Redis: the pool was busy
// (one identity's flood can keep it so), and taking Redis as down for
// RedisRecheck would let that flood decide for every request.
func (s *redisStore) answered(err error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil && s.down:
		s.down = false
		s.opts.Logger.Info("rate limits: redis answers again; the replicas share the limits again")
	case errors.Is(err, redis.ErrPoolTimeout):
		if now.Sub(s.warnedPool) >= time.Minute {
			s.warnedPool = now
			s.opts.Logger.Warn("rate limits: every connection to redis is busy; a request that waits longer than RedisPoolTimeout is limited by this replica alone", "limit", "RedisPoolTimeout")
		}
	case err != nil:
		if s.opts.Recheck > 0 {
			s.downUntil = now.Add(s.opts.Recheck)
		}
		if !s.down && now.Sub(s.warned) >= time.Minute {
			s.warned = now
			s.opts.Logger.Warn("rate limits: redis does not answer; each replica limits requests by itself until it does (local fallback)", "error", err)
		}
		s.down = true
	}
}

func (s *redisStore) close() error { return s.client.Close() }
