// Package identity verifies the OAuth 2.1 access tokens (JWTs) that clients
// of the gateway present, against the keys their issuer publishes, and
// reads who the caller is from them. Its one job is a go-sdk
// [auth.TokenVerifier]: [Verifier.Verify].
//
// Discovery (/.well-known/openid-configuration) and the JWKS come from
// github.com/coreos/go-oidc/v3, which also checks the signature, the
// issuer and the audience. This package adds what go-oidc leaves out for
// access tokens: a bounded token size, an algorithm allow-list checked
// before anything else is parsed, expiry and not-before with a leeway of
// at most [MaxLeeway], a bounded rate of JWKS refetches for unknown key ids
// ([DefaultRefetchInterval]), and the identity's claims.
//
// Opaque tokens are checked by RFC 7662 introspection when
// Config.Introspection is set: a token that is a compact JWS (three
// base64url parts, the first a JSON header) is verified as a JWT; any
// other is introspected, and its answer cached by the SHA-256 of the token
// (never the token): an active one until its exp, a refusing one for
// [InactiveCacheTTL], at most [DefaultIntrospectionCacheSize] answers.
// Concurrent requests with one unknown token make one call. Without
// Config.Introspection, a token that is not a JWT is refused.
package identity

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// MaxTokenBytes bounds the size of a token: a longer one is refused before
// it is parsed.
const MaxTokenBytes = 16 << 10

// MaxLeeway is the largest tolerance for clock skew on exp and nbf.
const MaxLeeway = 60 * time.Second

// DefaultLeeway is the tolerance for clock skew on exp and nbf when
// Options.Leeway is zero.
const DefaultLeeway = 30 * time.Second

// DefaultRefetchInterval is the least time between two fetches of the
// issuer's JWKS (and between two attempts at discovery) when
// Options.RefetchInterval is zero: a token with a key id the cached set
// lacks refetches the set at most this often, so that a flood of tokens
// with made-up key ids cannot make the gateway hammer the issuer.
const DefaultRefetchInterval = 10 * time.Second

// MaxFetchBytes bounds the body of a discovery document or a JWKS.
const MaxFetchBytes = 1 << 20

// fetchTimeout bounds one request to the issuer (discovery or JWKS).
const fetchTimeout = 10 * time.Second

// Algorithms are the signing algorithms a token may use. Never "none", never
// an HMAC one (HS256 and the like: its key would be the issuer's public key).
var Algorithms = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "EdDSA", "PS256"}

// algorithms are Algorithms for go-jose.
var algorithms = func() []jose.SignatureAlgorithm {
	var out []jose.SignatureAlgorithm
	for _, a := range Algorithms {
		out = append(out, jose.SignatureAlgorithm(a))
	}
	return out
}()

// Why a token is refused. Each wraps [auth.ErrInvalidToken], so that the
// go-sdk answers 401; the message is what the client reads, and never
// quotes the token.
var (
	ErrTooLarge        = fmt.Errorf("%w: token longer than %d bytes", auth.ErrInvalidToken, MaxTokenBytes)
	ErrMalformed       = fmt.Errorf("%w: not a signed JWT", auth.ErrInvalidToken)
	ErrAlgorithm       = fmt.Errorf("%w: signing algorithm not allowed (want one of %s)", auth.ErrInvalidToken, strings.Join(Algorithms, ", "))
	ErrSignature       = fmt.Errorf("%w: signature not made by a key of the issuer", auth.ErrInvalidToken)
	ErrKeysUnavailable = fmt.Errorf("%w: the issuer's keys are unavailable", auth.ErrInvalidToken)
	ErrIssuer          = fmt.Errorf("%w: issued by another issuer", auth.ErrInvalidToken)
	ErrAudience        = fmt.Errorf("%w: issued for another audience", auth.ErrInvalidToken)
	ErrExpired         = fmt.Errorf("%w: expired", auth.ErrInvalidToken)
	ErrNotYetValid     = fmt.Errorf("%w: not valid yet (nbf)", auth.ErrInvalidToken)
	ErrNoExpiry        = fmt.Errorf("%w: no exp claim", auth.ErrInvalidToken)
	// ErrNoSubject: the token names no subject (the configured claim, "sub"
	// by default), to which the go-sdk would bind the session: a session
	// bound to no one could be used with any other token.
	ErrNoSubject = fmt.Errorf("%w: no subject claim", auth.ErrInvalidToken)
)

// Config is what the gateway's config file says under "gateway.auth".
type Config struct {
	Issuer   string   // the issuer URL, as in the tokens' iss
	Audience string   // the gateway's resource URL; tokens must name it in aud
	Scopes   []string // required on every request (checked by the go-sdk middleware)
	Claims   Claims
	// Introspection, if set, checks the tokens that are not JWTs. An
	// active answer must name Audience in aud (an answer without aud is
	// refused), and Issuer in iss if it has one.
	Introspection *Introspection
}

// Claims name the claims that identity attributes come from. A zero field
// means its default.
type Claims struct {
	Subject string // default "sub"
	Client  string // default "client_id", else "azp"
	Scopes  string // default "scope" (space-separated) or "scp" (a list)
	Groups  string // default "groups"
}

// Options tune a [Verifier]. A nil *Options means all defaults.
type Options struct {
	// Leeway tolerates clock skew on exp and nbf. Default DefaultLeeway; at
	// most MaxLeeway.
	Leeway time.Duration
	// RefetchInterval is the least time between two fetches of the JWKS.
	// Default DefaultRefetchInterval.
	RefetchInterval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives one warning per outage of the issuer, and one line
	// when it is back. Default: discard.
	Logger *slog.Logger
	// Transport makes the requests to the issuer and the introspection
	// endpoint. Default http.DefaultTransport.
	Transport http.RoundTripper
	// IntrospectionTimeout bounds one introspection request. Default
	// DefaultIntrospectionTimeout.
	IntrospectionTimeout time.Duration
	// IntrospectionCacheSize bounds the number of introspection answers
	// cached. Default DefaultIntrospectionCacheSize.
	IntrospectionCacheSize int
	// VerifiedCacheSize bounds the number of JWTs kept as verified.
	// Default DefaultVerifiedCacheSize.
	VerifiedCacheSize int
}

// DefaultVerifiedCacheSize bounds the number of JWTs kept as verified when
// Options.VerifiedCacheSize is zero; the least recently used goes first.
// A JWT verified once is not verified again until it expires: its
// signature, issuer and audience cannot change, and its expiry is kept
// with it. A session sends the same token with each request, and a
// signature costs more than the rest of a call.
const DefaultVerifiedCacheSize = 10000

// Identity is who a verified token says the caller is. It never holds the
// token.
type Identity struct {
	Subject string
	Client  string
	Scopes  []string
	Groups  []string
	Claims  map[string]any // every claim of the token
}

// extraKey is the key of the Identity in auth.TokenInfo.Extra.
const extraKey = "identity"

// FromTokenInfo returns the identity a [Verifier] put in ti, or nil.
func FromTokenInfo(ti *auth.TokenInfo) *Identity {
	if ti == nil {
		return nil
	}
	id, _ := ti.Extra[extraKey].(*Identity)
	return id
}

// FromContext returns the identity of the request whose context is ctx (see
// [auth.TokenInfoFromContext]), or nil.
func FromContext(ctx context.Context) *Identity {
	return FromTokenInfo(auth.TokenInfoFromContext(ctx))
}

// A Verifier verifies access tokens for one issuer and audience. It is safe
// for concurrent use. It does no I/O until the first token, or
// [Verifier.Discover].
type Verifier struct {
	// Read-only after New.
	cfg     Config
	leeway  time.Duration
	now     func() time.Time
	logger  *slog.Logger
	fetches *fetchLimiter
	client  *http.Client
	// introspector checks opaque tokens; nil without Config.Introspection.
	introspector *introspector
	// verified are the JWTs verified, until their exp and leeway.
	verified *expiring[*auth.TokenInfo]

	// mu guards the following. It is held across discovery, which
	// coalesces concurrent attempts; fetchTimeout bounds it.
	mu         sync.Mutex
	verifier   *oidc.IDTokenVerifier
	discovered time.Time // the end of the last attempt at discovery, while verifier is nil
	lastErr    error     // its error
}

// New returns a Verifier for cfg. It does no I/O.
func New(cfg Config, opts *Options) *Verifier {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Leeway == 0 {
		o.Leeway = DefaultLeeway
	}
	o.Leeway = min(max(o.Leeway, 0), MaxLeeway)
	if o.RefetchInterval <= 0 {
		o.RefetchInterval = DefaultRefetchInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	cfg.Scopes = slices.Clone(cfg.Scopes)
	f := &fetchLimiter{next: o.Transport, interval: o.RefetchInterval, now: o.Now, logger: o.Logger, issuer: cfg.Issuer}
	v := &Verifier{
		cfg:     cfg,
		leeway:  o.Leeway,
		now:     o.Now,
		logger:  o.Logger,
		fetches: f,
		client:  &http.Client{Transport: f, Timeout: fetchTimeout},
	}
	size := o.VerifiedCacheSize
	if size <= 0 {
		size = DefaultVerifiedCacheSize
	}
	v.verified = newExpiring[*auth.TokenInfo](size, o.Now)
	if cfg.Introspection != nil {
		v.introspector = newIntrospector(*cfg.Introspection, &o)
	}
	return v
}

// Leeway is the verifier's tolerance for clock skew, for the go-sdk
// middleware's own expiry check (RequireBearerTokenOptions.ClockSkew).
func (v *Verifier) Leeway() time.Duration { return v.leeway }

// Discover fetches the issuer's discovery document, if it has not yet. A
// failure is returned, and the next token tries again (at most once per
// refetch interval).
func (v *Verifier) Discover(ctx context.Context) error {
	_, err := v.oidcVerifier(ctx)
	return err
}

// fetchContext is the context of a fetch that a token causes: one
// request's client going away must not fail it for the others, which
// would wait the refetch interval; the HTTP client's timeout bounds it.
func fetchContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

func (v *Verifier) oidcVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	now := v.now()
	if v.lastErr != nil && now.Sub(v.discovered) < v.fetches.interval {
		return nil, v.lastErr
	}
	ctx = oidc.ClientContext(ctx, v.client)
	p, err := oidc.NewProvider(ctx, v.cfg.Issuer)
	// The interval counts from the end of the attempt: one that hung until
	// its timeout (as long as the interval) must not let each request that
	// waited for it make another in turn.
	v.discovered = v.now()
	if err != nil {
		v.lastErr = fmt.Errorf("identity: discovery at %s: %w", v.cfg.Issuer, shortError{err})
		v.fetches.failed(v.lastErr)
		return nil, v.lastErr
	}
	v.fetches.succeeded()
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKSURI == "" {
		v.lastErr = fmt.Errorf("identity: discovery at %s: no jwks_uri", v.cfg.Issuer)
		return nil, v.lastErr
	}
	keys := &keySet{url: meta.JWKSURI, client: v.client, limiter: v.fetches, sem: make(chan struct{}, 1)}
	v.verifier = oidc.NewVerifier(v.cfg.Issuer, keys, &oidc.Config{
		ClientID:             v.cfg.Audience,
		SupportedSigningAlgs: Algorithms,
		SkipExpiryCheck:      true, // checked with the leeway, in Verify
	})
	return v.verifier, nil
}

// Verify is an [auth.TokenVerifier]. It returns the token's scopes, expiry
// and subject (as UserID, to which the go-sdk binds the session), with the
// [Identity] in Extra; or an error that wraps [auth.ErrInvalidToken] (and
// one of this package's sentinels) and never quotes the token.
func (v *Verifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if len(token) > MaxTokenBytes {
		return nil, ErrTooLarge
	}
	if v.introspector != nil && !isJWS(token) {
		return v.verifyOpaque(ctx, token)
	}
	key := sha256.Sum256([]byte(token))
	if info, ok := v.verified.get(key); ok {
		own := *info // the caller's
		return &own, nil
	}
	if err := checkHeader(token); err != nil {
		return nil, err
	}
	ov, err := v.oidcVerifier(fetchContext(ctx))
	if err != nil {
		return nil, ErrKeysUnavailable // the log says why, once
	}
	t, err := ov.Verify(fetchContext(ctx), token)
	if err != nil {
		return nil, classify(err)
	}
	var claims map[string]any
	if err := t.Claims(&claims); err != nil {
		return nil, ErrMalformed
	}
	var times struct {
		Exp *json.Number `json:"exp"`
		Nbf *json.Number `json:"nbf"`
	}
	if err := t.Claims(&times); err != nil {
		return nil, ErrMalformed
	}
	now := v.now()
	exp, ok := unixTime(times.Exp)
	if !ok {
		return nil, ErrNoExpiry
	}
	if now.After(exp.Add(v.leeway)) {
		return nil, ErrExpired
	}
	if nbf, ok := unixTime(times.Nbf); ok && now.Add(v.leeway).Before(nbf) {
		return nil, ErrNotYetValid
	}
	id := v.identity(claims)
	if id.Subject == "" {
		return nil, ErrNoSubject
	}
	info := &auth.TokenInfo{
		Scopes:     id.Scopes,
		Expiration: exp,
		UserID:     id.Subject,
		Extra:      map[string]any{extraKey: id},
	}
	// Valid now, so until its expiry: nbf has passed for good.
	v.verified.put(key, info, exp.Add(v.leeway).Add(time.Nanosecond))
	own := *info
	return &own, nil
}

// unixTime reads a NumericDate.
func unixTime(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// isJWS reports whether token has the form of a compact JWS: three
// dot-separated parts, the first a base64url-encoded JSON object.
func isJWS(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return false
	}
	var h map[string]any
	return json.Unmarshal(raw, &h) == nil
}

// checkHeader refuses, before any key is looked up, a token that is not
// three dot-separated parts or whose header names an algorithm not in
// Algorithms.
func checkHeader(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ErrMalformed
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return ErrMalformed
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return ErrMalformed
	}
	if !slices.Contains(Algorithms, h.Alg) {
		return ErrAlgorithm
	}
	return nil
}

// classify maps go-oidc's errors, which may quote claims, to this
// package's sentinels.
func classify(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "issued by a different provider"):
		return ErrIssuer
	case strings.Contains(msg, "expected audience"):
		return ErrAudience
	case strings.Contains(msg, errKeysUnavailable.Error()):
		return ErrKeysUnavailable
	case strings.Contains(msg, "failed to verify signature"):
		return ErrSignature
	default:
		return ErrMalformed
	}
}

// identity reads the identity's attributes from claims.
func (v *Verifier) identity(claims map[string]any) *Identity {
	c := v.cfg.Claims
	id := &Identity{Claims: claims}
	id.Subject, _ = claims[or(c.Subject, "sub")].(string)
	if c.Client != "" {
		id.Client, _ = claims[c.Client].(string)
	} else if s, ok := claims["client_id"].(string); ok {
		id.Client = s
	} else {
		id.Client, _ = claims["azp"].(string)
	}
	if c.Scopes != "" {
		id.Scopes = stringList(claims[c.Scopes])
	} else if s := stringList(claims["scope"]); s != nil {
		id.Scopes = s
	} else {
		id.Scopes = stringList(claims["scp"])
	}
	id.Groups = stringList(claims[or(c.Groups, "groups")])
	return id
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// stringList reads a claim that holds a list of strings, or a string of
// space-separated words; nil for anything else.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// fetchLimiter lets through at most one fetch of the JWKS per interval,
// and logs an outage of the issuer once, and its end. It is also the
// transport of the requests to the issuer, which bounds their bodies.
type fetchLimiter struct {
	next     http.RoundTripper
	interval time.Duration
	now      func() time.Time
	logger   *slog.Logger
	issuer   string

	mu   sync.Mutex // guards the following
	last time.Time  // when the last request was let through
	down bool       // the last request failed
}

// allow reports whether a request may go out now, and if so counts it.
func (f *fetchLimiter) allow() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if !f.last.IsZero() && now.Sub(f.last) < f.interval {
		return false
	}
	f.last = now
	return true
}

// stamp counts the request let through as made now, at its end: one that
// hung until its timeout (as long as the interval) must not let each
// caller that waited for it make another in turn.
func (f *fetchLimiter) stamp() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = f.now()
}

// forgive forgets the last request let through, so that the next may go
// at once.
func (f *fetchLimiter) forgive() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = time.Time{}
}

func (f *fetchLimiter) failed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		f.down = true
		f.logger.Warn("identity: the issuer is unreachable; tokens signed by keys already fetched still verify, others are refused", "issuer", f.issuer, "error", err)
	}
}

func (f *fetchLimiter) succeeded() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		f.down = false
		f.logger.Info("identity: the issuer is reachable again", "issuer", f.issuer)
	}
}

// RoundTrip implements http.RoundTripper: it bounds the response body.
func (f *fetchLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, n: MaxFetchBytes}
	return resp, nil
}

// boundedBody ends a response body with an error after n bytes.
type boundedBody struct {
	io.ReadCloser
	n int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, fmt.Errorf("identity: response longer than %d bytes (MaxFetchBytes)", MaxFetchBytes)
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.ReadCloser.Read(p)
	b.n -= int64(n)
	return n, err
}

// maxErrorText bounds the text of an error from the issuer in a log line:
// go-oidc quotes the whole body of a failed discovery.
const maxErrorText = 200

// shortError is an error whose text is cut to maxErrorText.
type shortError struct{ err error }

func (e shortError) Error() string {
	if s := e.err.Error(); len(s) > maxErrorText {
		return s[:maxErrorText] + "..."
	}
	return e.err.Error()
}

func (e shortError) Unwrap() error { return e.err }
