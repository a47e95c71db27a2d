package identity

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/sync/singleflight"
)

// MaxIntrospectionBytes bounds the body of an introspection answer: a
// longer one is an error of the endpoint.
const MaxIntrospectionBytes = 64 << 10

// DefaultIntrospectionTimeout bounds one introspection request when
// Options.IntrospectionTimeout is zero.
const DefaultIntrospectionTimeout = 5 * time.Second

// MaxIntrospectionCacheTTL is how long an active answer without exp is
// cached, and the expiry the token is then given: the endpoint is asked
// again after it.
const MaxIntrospectionCacheTTL = 5 * time.Minute

// InactiveCacheTTL is how long an answer that refuses a token (inactive,
// or active but expired or for another audience or issuer) is cached, so
// that a flood of one bad token makes one introspection call per
// InactiveCacheTTL.
const InactiveCacheTTL = 30 * time.Second

// DefaultIntrospectionCacheSize bounds the number of answers cached when
// Options.IntrospectionCacheSize is zero; the least recently used goes
// first.
const DefaultIntrospectionCacheSize = 10000

// Why an opaque token is refused. Each wraps [auth.ErrInvalidToken].
var (
	ErrInactive                 = fmt.Errorf("%w: not active (introspection)", auth.ErrInvalidToken)
	ErrIntrospectionUnavailable = fmt.Errorf("%w: the introspection endpoint is unavailable", auth.ErrInvalidToken)
	ErrNoAudience               = fmt.Errorf("%w: no audience (introspection)", auth.ErrInvalidToken)
)

// Introspection is the RFC 7662 endpoint that opaque tokens (those that
// are not a compact JWS) are checked at.
type Introspection struct {
	// URL of the endpoint, which is sent POST token=... (form-encoded).
	URL string
	// ClientID and ClientSecret, if ClientID is set, authenticate the
	// gateway to the endpoint with HTTP Basic (RFC 6749 §2.3.1).
	ClientID, ClientSecret string
}

// introspector asks an RFC 7662 endpoint about tokens, and caches its
// answers by the SHA-256 of the token. It is safe for concurrent use.
type introspector struct {
	// Read-only after newIntrospector.
	cfg     Introspection
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
	logger  *slog.Logger
	flight  singleflight.Group

	answers *expiring[*answer]

	// mu guards the following.
	mu   sync.Mutex
	down bool // the last call failed
}

// answer is an introspection answer: the claims, with active and exp read.
type answer struct {
	active bool
	exp    time.Time // zero if none
	claims map[string]any
}

func newIntrospector(cfg Introspection, o *Options) *introspector {
	timeout := o.IntrospectionTimeout
	if timeout <= 0 {
		timeout = DefaultIntrospectionTimeout
	}
	size := o.IntrospectionCacheSize
	if size <= 0 {
		size = DefaultIntrospectionCacheSize
	}
	return &introspector{
		cfg:     cfg,
		timeout: timeout,
		client: &http.Client{
			Transport: o.Transport,
			Timeout:   timeout,
			// A redirect is not followed: the credentials and the token
			// would go where the config did not say.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now:     o.Now,
		logger:  o.Logger,
		answers: newExpiring[*answer](size, o.Now),
	}
}

// lookup returns the answer about token: from the cache, or from the
// endpoint, with one call for any number of concurrent lookups of one
// token. The error (the endpoint's failure) is never cached.
func (in *introspector) lookup(ctx context.Context, token string) (*answer, error) {
	key := sha256.Sum256([]byte(token))
	if a := in.cached(key); a != nil {
		return a, nil
	}
	ch := in.flight.DoChan(string(key[:]), func() (any, error) {
		if a := in.cached(key); a != nil { // answered since our lookup
			return a, nil
		}
		a, err := in.call(context.WithoutCancel(ctx), token)
		if err != nil {
			in.failed(err)
			return nil, err
		}
		in.succeeded()
		in.store(key, a)
		return a, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*answer), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// cached returns the cached answer of key, or nil.
func (in *introspector) cached(key [sha256.Size]byte) *answer {
	a, _ := in.answers.get(key)
	return a
}

// store caches a: an active answer until its exp (or
// MaxIntrospectionCacheTTL without one), any other for InactiveCacheTTL.
func (in *introspector) store(key [sha256.Size]byte, a *answer) {
	now := in.now()
	until := now.Add(InactiveCacheTTL)
	switch {
	case a.active && a.exp.IsZero():
		until = now.Add(MaxIntrospectionCacheTTL)
	case a.active && a.exp.After(until):
		until = a.exp
	}
	in.answers.put(key, a, until)
}

// call asks the endpoint about token. Its errors name the endpoint, and
// never the token or the credentials.
func (in *introspector) call(ctx context.Context, token string) (*answer, error) {
	fail := func(format string, args ...any) (*answer, error) {
		return nil, fmt.Errorf("identity: introspection at %s: "+format, append([]any{in.cfg.URL}, args...)...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.cfg.URL, strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return fail("%w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.cfg.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(in.cfg.ClientID), url.QueryEscape(in.cfg.ClientSecret))
	}
	resp, err := in.client.Do(req)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fail("no answer within %v (the introspection timeout)", in.timeout)
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL
		}
		return fail("%w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxIntrospectionBytes+1))
	if err != nil {
		return fail("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return fail("answered %s, a redirect, which is not followed", resp.Status)
		}
		return fail("answered %s, want 200 OK", resp.Status)
	}
	if len(body) > MaxIntrospectionBytes {
		return fail("answer longer than %d bytes (MaxIntrospectionBytes)", MaxIntrospectionBytes)
	}
	// Numbers are float64, as in the claims of a JWT.
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil || claims == nil {
		return fail("the answer is not a JSON object")
	}
	a := &answer{claims: claims}
	active, ok := claims["active"].(bool)
	if !ok {
		return fail(`the answer has no boolean "active"`)
	}
	if a.active = active; !active {
		a.claims = nil // nothing else is read from it
		return a, nil
	}
	if v, ok := claims["exp"]; ok {
		f, ok := v.(float64)
		if !ok {
			return fail(`"exp" is not a number`)
		}
		a.exp = time.Unix(int64(f), 0)
	}
	return a, nil
}

func (in *introspector) failed(err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.down {
		in.down = true
		in.logger.Warn("identity: the introspection endpoint is unavailable; opaque tokens not already cached are refused", "endpoint", in.cfg.URL, "error", shortError{err})
	}
}

func (in *introspector) succeeded() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.down {
		in.down = false
		in.logger.Info("identity: the introspection endpoint answers again", "endpoint", in.cfg.URL)
	}
}

// verifyOpaque verifies token by introspection.
func (v *Verifier) verifyOpaque(ctx context.Context, token string) (*auth.TokenInfo, error) {
	a, err := v.introspector.lookup(ctx, token)
	if err != nil {
		return nil, ErrIntrospectionUnavailable // the log says why, once per outage
	}
	if !a.active {
		return nil, ErrInactive
	}
	now := v.now()
	exp := a.exp
	if exp.IsZero() {
		exp = now.Add(MaxIntrospectionCacheTTL) // asked again by then
	} else if now.After(exp.Add(v.leeway)) {
		return nil, ErrExpired
	}
	if f, ok := a.claims["nbf"].(float64); ok && now.Add(v.leeway).Before(time.Unix(int64(f), 0)) {
		return nil, ErrNotYetValid
	}
	aud, ok := a.claims["aud"]
	if !ok {
		return nil, ErrNoAudience
	}
	if s, ok := aud.(string); ok && s != v.cfg.Audience || !ok && !slices.Contains(stringList(aud), v.cfg.Audience) {
		return nil, ErrAudience
	}
	if iss, ok := a.claims["iss"]; ok && iss != v.cfg.Issuer {
		return nil, ErrIssuer
	}
	id := v.identity(a.claims)
	if id.Subject == "" {
		id.Subject, _ = a.claims["sub"].(string)
	}
	if id.Client == "" {
		id.Client, _ = a.claims["client_id"].(string)
	}
	if id.Scopes == nil {
		id.Scopes = stringList(a.claims["scope"])
	}
	return &auth.TokenInfo{
		Scopes:     id.Scopes,
		Expiration: exp,
		UserID:     id.Subject,
		Extra:      map[string]any{extraKey: id},
	}, nil
}
