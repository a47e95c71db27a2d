package identity_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
)

const (
	testIssuer       = "https://id.example.test"
	introspectionURL = "https://id.example.test/oauth2/introspect"
	introspectClient = "gateway:1"
	introspectSecret = "s3cret&more"
	opaqueToken      = "ory_at_opaque-token-value.signature"
)

// endpoint is a fake RFC 7662 endpoint, served in memory (no socket, so
// that tests can run in a synctest bubble): handle answers each request,
// and calls counts the POSTs (introspections, not discovery).
type endpoint struct {
	calls  atomic.Int32
	handle func(w http.ResponseWriter, r *http.Request)
}

// RoundTrip implements http.RoundTripper.
func (e *endpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		e.calls.Add(1)
	}
	rec := httptest.NewRecorder()
	e.handle(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// answering returns an endpoint that answers every token with answer (a
// JSON object).
func answering(answer string) *endpoint {
	return &endpoint{handle: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	}}
}

// newIntrospecting returns a verifier that introspects at e, on clk.
func newIntrospecting(e http.RoundTripper, clk *clock, logs *logBuf, opts *identity.Options) *identity.Verifier {
	var o identity.Options
	if opts != nil {
		o = *opts
	}
	o.Transport, o.Now = e, clk.Now
	if logs != nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	return identity.New(identity.Config{
		Issuer:        testIssuer,
		Audience:      audience,
		Claims:        identity.Claims{Groups: "roles"},
		Introspection: &identity.Introspection{URL: introspectionURL, ClientID: introspectClient, ClientSecret: introspectSecret},
	}, &o)
}

// TestIntrospection: an opaque token is verified by what the endpoint
// says: active with this audience (and issuer, if named), within exp
// and nbf (with the leeway); and the request is a form POST with the
// client's credentials.
func TestIntrospection(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := func(d time.Duration) int64 { return now.Add(d).Unix() }
	good := fmt.Sprintf(`{"active": true, "sub": "alice", "client_id": "app", "scope": "mcp memory:read", "roles": ["admin"], "aud": [%q], "iss": %q, "exp": %d}`, audience, testIssuer, exp(time.Hour))
	for _, tc := range []struct {
		name, answer string
		want         error
	}{
		{"active", good, nil},
		{"aud a string", fmt.Sprintf(`{"active": true, "sub": "alice", "client_id": "app", "scope": "mcp memory:read", "roles": ["admin"], "aud": %q, "exp": %d}`, audience, exp(time.Hour)), nil},
		{"inactive", `{"active": false}`, identity.ErrInactive},
		{"active not a bool", `{"active": "true", "aud": [] }`, identity.ErrIntrospectionUnavailable},
		{"expired", fmt.Sprintf(`{"active": true, "aud": [%q], "exp": %d}`, audience, exp(-2*identity.DefaultLeeway)), identity.ErrExpired},
		{"expired within the leeway", fmt.Sprintf(`{"active": true, "sub": "alice", "client_id": "app", "scope": "mcp memory:read", "roles": ["admin"], "aud": [%q], "exp": %d}`, audience, exp(-identity.DefaultLeeway/2)), nil},
		{"not yet valid", fmt.Sprintf(`{"active": true, "aud": [%q], "exp": %d, "nbf": %d}`, audience, exp(time.Hour), exp(time.Hour/2)), identity.ErrNotYetValid},
		{"another audience", fmt.Sprintf(`{"active": true, "aud": ["https://other.example.test/mcp"], "exp": %d}`, exp(time.Hour)), identity.ErrAudience},
		{"audience a prefix", fmt.Sprintf(`{"active": true, "aud": %q, "exp": %d}`, audience+" x", exp(time.Hour)), identity.ErrAudience},
		{"no audience", fmt.Sprintf(`{"active": true, "sub": "alice", "exp": %d}`, exp(time.Hour)), identity.ErrNoAudience},
		{"another issuer", fmt.Sprintf(`{"active": true, "aud": [%q], "iss": "https://evil.example.test", "exp": %d}`, audience, exp(time.Hour)), identity.ErrIssuer},
		{"not JSON", `<html>`, identity.ErrIntrospectionUnavailable},
		{"exp not a number", fmt.Sprintf(`{"active": true, "aud": [%q], "exp": "soon"}`, audience), identity.ErrIntrospectionUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := answering(tc.answer)
			var got *http.Request
			var form string
			handle := e.handle
			e.handle = func(w http.ResponseWriter, r *http.Request) {
				got = r
				r.ParseForm()
				form = r.PostForm.Encode()
				handle(w, r)
			}
			v := newIntrospecting(e, &clock{t: now}, nil, nil)
			ti, err := v.Verify(t.Context(), opaqueToken, nil)
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), opaqueToken) {
				t.Errorf("the error quotes the token: %v", err)
			}
			if got.Method != http.MethodPost || got.URL.String() != introspectionURL || got.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || form != "token="+opaqueToken {
				t.Errorf("request %s %s %q, form %q", got.Method, got.URL, got.Header.Get("Content-Type"), form)
			}
			if user, pass, ok := got.BasicAuth(); !ok || user != "gateway%3A1" || pass != "s3cret%26more" {
				t.Errorf("basic auth %q %q %v, want the form-encoded client ID and secret", user, pass, ok)
			}
			if err != nil {
				return
			}
			want := &identity.Identity{Subject: "alice", Client: "app", Scopes: []string{"mcp", "memory:read"}, Groups: []string{"admin"}}
			if diff := cmp.Diff(want, identity.FromTokenInfo(ti), cmpopts.IgnoreFields(identity.Identity{}, "Claims")); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
			if ti.UserID != "alice" || !ti.Expiration.Equal(time.Unix(exp(time.Hour), 0)) && !strings.Contains(tc.name, "leeway") {
				t.Errorf("TokenInfo: user %q, expiration %v", ti.UserID, ti.Expiration)
			}
		})
	}
}

// TestIntrospectionOnlyOpaque: a token in the form of a JWT is verified
// as one, never introspected; without introspection, an opaque token is
// refused as malformed.
func TestIntrospectionOnlyOpaque(t *testing.T) {
	e := answering(`{"active": true}`)
	v := newIntrospecting(e, &clock{t: time.Now()}, nil, &identity.Options{RefetchInterval: time.Hour})
	forged := issuertest.Sign(t, issuertest.NewKey(t, jose.ES256), map[string]any{"sub": "x"})
	if _, err := v.Verify(t.Context(), forged, nil); err == nil {
		t.Error("a JWT no issuer signed was accepted")
	}
	if n := e.calls.Load(); n != 0 {
		t.Errorf("a JWT made %d introspection calls, want 0", n)
	}
	plain := identity.New(identity.Config{Issuer: testIssuer, Audience: audience}, &identity.Options{Transport: e})
	if _, err := plain.Verify(t.Context(), opaqueToken, nil); !errors.Is(err, identity.ErrMalformed) {
		t.Errorf("an opaque token without introspection: %v, want ErrMalformed", err)
	}
	if n := e.calls.Load(); n != 0 {
		t.Errorf("%d introspection calls without introspection configured", n)
	}
}

// TestIntrospectionCache: an active answer is cached until its exp, on
// the verifier's clock; an inactive one for InactiveCacheTTL, so a flood
// of one bad token makes one call per InactiveCacheTTL; an answer without
// exp for MaxIntrospectionCacheTTL; the cache holds at most
// IntrospectionCacheSize answers, the least recently used going first.
func TestIntrospectionCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	var mu sync.Mutex
	answers := map[string]string{} // by token
	e := &endpoint{handle: func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		a, ok := answers[r.PostForm.Get("token")]
		if !ok {
			a = `{"active": false}`
		}
		fmt.Fprint(w, a)
	}}
	set := func(token, answer string) {
		mu.Lock()
		defer mu.Unlock()
		answers[token] = answer
	}
	v := newIntrospecting(e, clk, nil, &identity.Options{Leeway: time.Second, IntrospectionCacheSize: 3})
	verify := func(token string) error {
		_, err := v.Verify(t.Context(), token, nil)
		return err
	}
	calls := func(want int32, what string) {
		t.Helper()
		if n := e.calls.Load(); n != want {
			t.Errorf("%s: %d introspection calls in all, want %d", what, n, want)
		}
	}

	set("good", fmt.Sprintf(`{"active": true, "aud": %q, "exp": %d}`, audience, now.Add(10*time.Minute).Unix()))
	for range 5 {
		if err := verify("good"); err != nil {
			t.Fatal(err)
		}
	}
	calls(1, "an active token verified 5 times")
	set("good", `{"active": false}`) // revoked: seen only once the cache expires
	clk.Add(10*time.Minute - time.Second)
	if err := verify("good"); err != nil {
		t.Errorf("before its exp: %v", err)
	}
	calls(1, "before its exp")
	clk.Add(time.Second)
	if err := verify("good"); !errors.Is(err, identity.ErrInactive) {
		t.Errorf("at its exp, once revoked: %v, want ErrInactive", err)
	}
	calls(2, "at its exp")

	for range 100 {
		if err := verify("bad"); !errors.Is(err, identity.ErrInactive) {
			t.Fatalf("a bad token: %v", err)
		}
	}
	calls(3, "a flood of one bad token")
	clk.Add(identity.InactiveCacheTTL)
	if err := verify("bad"); !errors.Is(err, identity.ErrInactive) {
		t.Fatalf("a bad token: %v", err)
	}
	calls(4, "a bad token after InactiveCacheTTL")

	set("noexp", fmt.Sprintf(`{"active": true, "aud": %q}`, audience))
	ti, err := v.Verify(t.Context(), "noexp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(identity.MaxIntrospectionCacheTTL); !ti.Expiration.Equal(want) {
		t.Errorf("an active answer without exp expires %v, want %v", ti.Expiration, want)
	}
	clk.Add(identity.MaxIntrospectionCacheTTL - time.Second)
	verify("noexp")
	calls(5, "no exp, within MaxIntrospectionCacheTTL")
	clk.Add(time.Second)
	verify("noexp")
	calls(6, "no exp, after MaxIntrospectionCacheTTL")

	// The cache holds noexp, and then a, b, c: noexp is out.
	for _, tok := range []string{"a", "b", "c"} {
		set(tok, fmt.Sprintf(`{"active": true, "aud": %q, "exp": %d}`, audience, clk.Now().Add(time.Hour).Unix()))
		verify(tok)
	}
	calls(9, "three new tokens")
	verify("a") // now b is the least recently used
	calls(9, "a cached token")
	verify("noexp")
	calls(10, "the token that went out of the bounded cache")
	verify("a")
	verify("c")
	calls(10, "two cached tokens")
	verify("b")
	calls(11, "the least recently used, gone")
}

// TestIntrospectionSingleFlight: concurrent requests with one unknown
// token make one call, and wait for its answer; one that gives up does
// not cancel it for the others.
func TestIntrospectionSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		e := answering(fmt.Sprintf(`{"active": true, "sub": "alice", "aud": %q, "exp": %d}`, audience, time.Now().Add(time.Hour).Unix()))
		answer := e.handle
		e.handle = func(w http.ResponseWriter, r *http.Request) {
			<-release
			answer(w, r)
		}
		v := newIntrospecting(e, &clock{t: time.Now()}, nil, nil)
		const n = 20
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := v.Verify(context.Background(), opaqueToken, nil)
				errs <- err
			}()
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			_, err := v.Verify(ctx, opaqueToken, nil)
			errs <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errs; !errors.Is(err, identity.ErrIntrospectionUnavailable) {
			t.Errorf("the request that gave up: %v", err)
		}
		close(release)
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("Verify: %v", err)
			}
		}
		if c := e.calls.Load(); c != 1 {
			t.Errorf("%d concurrent requests with one token made %d calls, want 1", n+1, c)
		}
	})
}

// TestIntrospectionOutage: while the endpoint fails, opaque tokens are
// refused, with one log line per outage naming the endpoint (not the
// token, not the secret), and one when it is back; answers cached before
// still verify.
func TestIntrospectionOutage(t *testing.T) {
	var down atomic.Bool
	e := &endpoint{}
	e.handle = func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "upstream connect error", http.StatusBadGateway)
			return
		}
		fmt.Fprintf(w, `{"active": true, "aud": %q, "exp": %d}`, audience, time.Now().Add(time.Hour).Unix())
	}
	logs := &logBuf{}
	v := newIntrospecting(e, &clock{t: time.Now()}, logs, nil)
	if _, err := v.Verify(t.Context(), "cached-before", nil); err != nil {
		t.Fatal(err)
	}
	for outage := 1; outage <= 2; outage++ {
		down.Store(true)
		for i := range 5 {
			if _, err := v.Verify(t.Context(), fmt.Sprintf("%s-%d-%d", opaqueToken, outage, i), nil); !errors.Is(err, identity.ErrIntrospectionUnavailable) {
				t.Errorf("a token while the endpoint is down: %v, want ErrIntrospectionUnavailable", err)
			}
		}
		if _, err := v.Verify(t.Context(), "cached-before", nil); err != nil {
			t.Errorf("a token cached before the outage: %v", err)
		}
		if n := logs.count("level=WARN"); n != outage {
			t.Errorf("outage %d: %d warnings in all, want %d:\n%s", outage, n, outage, logs.b.String())
		}
		down.Store(false)
		if _, err := v.Verify(t.Context(), fmt.Sprintf("after-%d", outage), nil); err != nil {
			t.Errorf("once the endpoint is back: %v", err)
		}
		if n := logs.count("introspection endpoint answers again"); n != outage {
			t.Errorf("outage %d: %d lines saying it is back, want %d", outage, n, outage)
		}
	}
	log := logs.b.String()
	if !strings.Contains(log, introspectionURL) || !strings.Contains(log, "502") {
		t.Errorf("the log does not name the endpoint and its answer:\n%s", log)
	}
	if strings.Contains(log, opaqueToken) || strings.Contains(log, introspectSecret) || strings.Contains(log, "s3cret") {
		t.Errorf("the log holds the token or the secret:\n%s", log)
	}
}

// TestIntrospectionBounds: a slow endpoint is given up after the timeout,
// and a huge answer after MaxIntrospectionBytes, each logged with the
// endpoint.
func TestIntrospectionBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &endpoint{handle: func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}
		logs := &logBuf{}
		v := newIntrospecting(e, &clock{t: time.Now()}, logs, &identity.Options{IntrospectionTimeout: 3 * time.Second})
		start := time.Now()
		if _, err := v.Verify(t.Context(), opaqueToken, nil); !errors.Is(err, identity.ErrIntrospectionUnavailable) {
			t.Errorf("a slow endpoint: %v", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("a slow endpoint was given up after %v, want the 3s timeout", d)
		}
		if !strings.Contains(logs.b.String(), "no answer within 3s") {
			t.Errorf("the log does not say it timed out:\n%s", logs.b.String())
		}
	})
	e := answering(fmt.Sprintf(`{"active": true, "aud": %q, "pad": %q}`, audience, strings.Repeat("x", identity.MaxIntrospectionBytes)))
	logs := &logBuf{}
	v := newIntrospecting(e, &clock{t: time.Now()}, logs, nil)
	if _, err := v.Verify(t.Context(), opaqueToken, nil); !errors.Is(err, identity.ErrIntrospectionUnavailable) {
		t.Errorf("a huge answer: %v", err)
	}
	if !strings.Contains(logs.b.String(), "MaxIntrospectionBytes") {
		t.Errorf("the log does not name the limit:\n%s", logs.b.String())
	}
}

// TestIntrospectionRedirect: a redirect is not followed (the token and
// the credentials would go elsewhere): the token is refused.
func TestIntrospectionRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		fmt.Fprintf(w, `{"active": true, "aud": %q}`, audience)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	logs := &logBuf{}
	v := identity.New(identity.Config{Issuer: testIssuer, Audience: audience,
		Introspection: &identity.Introspection{URL: srv.URL, ClientID: "gw", ClientSecret: introspectSecret}},
		&identity.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Transport: srv.Client().Transport})
	if _, err := v.Verify(t.Context(), opaqueToken, nil); !errors.Is(err, identity.ErrIntrospectionUnavailable) {
		t.Errorf("an endpoint that redirects: %v", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
	if !strings.Contains(logs.b.String(), "redirect") || !strings.Contains(logs.b.String(), srv.URL) {
		t.Errorf("the log does not say the endpoint redirected:\n%s", logs.b.String())
	}
}
