package identity_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
)

const audience = "http://127.0.0.1:7777/mcp"

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// logBuf collects log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

type fixture struct {
	is    *issuertest.Issuer
	clk   *clock
	log   *logBuf
	v     *identity.Verifier
	start time.Time
}

func setup(t *testing.T, claims identity.Claims) *fixture {
	t.Helper()
	is := issuertest.New(t)
	start := time.Now().Truncate(time.Second)
	clk := &clock{t: start}
	log := &logBuf{}
	v := identity.New(identity.Config{Issuer: is.URL(), Audience: audience, Scopes: []string{"mcp"}, Claims: claims}, &identity.Options{
		Now:       clk.Now,
		Logger:    slog.New(slog.NewTextHandler(log, nil)),
		Transport: is.Transport(),
	})
	return &fixture{is: is, clk: clk, log: log, v: v, start: start}
}

func (f *fixture) verify(tok string) (*auth.TokenInfo, error) {
	return f.v.Verify(context.Background(), tok, nil)
}

func TestVerify(t *testing.T) {
	f := setup(t, identity.Claims{})
	now := f.start
	valid := func(edit func(c map[string]any)) string {
		c := f.is.Claims(audience, "mcp read", now)
		if edit != nil {
			edit(c)
		}
		return f.is.Token(t, c)
	}
	stranger := issuertest.NewKey(t, jose.ES256)
	pathKid := issuertest.NewKey(t, jose.ES256)
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k1"}`))
	body := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + f.is.URL() + `","aud":"` + audience + `","exp":9999999999}`))
	tests := []struct {
		name  string
		token string
		want  error // nil: accepted
	}{
		{"valid", valid(nil), nil},
		{"expired within the leeway", valid(func(c map[string]any) { c["exp"] = now.Add(-identity.DefaultLeeway + time.Second).Unix() }), nil},
		{"expired beyond the leeway", valid(func(c map[string]any) { c["exp"] = now.Add(-identity.DefaultLeeway - time.Second).Unix() }), identity.ErrExpired},
		{"no exp", valid(func(c map[string]any) { delete(c, "exp") }), identity.ErrNoExpiry},
		{"no sub (the session would be bound to no one)", valid(func(c map[string]any) { delete(c, "sub") }), identity.ErrNoSubject},
		{"an empty sub", valid(func(c map[string]any) { c["sub"] = "" }), identity.ErrNoSubject},
		{"nbf within the leeway", valid(func(c map[string]any) { c["nbf"] = now.Add(identity.DefaultLeeway - time.Second).Unix() }), nil},
		{"nbf beyond the leeway", valid(func(c map[string]any) { c["nbf"] = now.Add(identity.DefaultLeeway + time.Second).Unix() }), identity.ErrNotYetValid},
		{"another audience", valid(func(c map[string]any) { c["aud"] = "https://other.example/mcp" }), identity.ErrAudience},
		{"audience among others", valid(func(c map[string]any) { c["aud"] = []string{"https://other.example/mcp", audience} }), nil},
		{"another issuer", valid(func(c map[string]any) { c["iss"] = "https://evil.example" }), identity.ErrIssuer},
		{"a key the issuer never had", issuertest.Sign(t, stranger, f.is.Claims(audience, "mcp", now)), identity.ErrSignature},
		{"alg none", noneHeader + "." + body + ".", identity.ErrAlgorithm},
		{"HS256 keyed with the public key", issuertest.SignHMAC(t, f.is.PublicKeyJSON(t), "k1", f.is.Claims(audience, "mcp", now)), identity.ErrAlgorithm},
		{"empty", "", identity.ErrMalformed},
		{"one part", "abc", identity.ErrMalformed},
		{"three parts of noise", "a.b.c", identity.ErrMalformed},
		{"a header that is not JSON", base64.RawURLEncoding.EncodeToString([]byte("{alg")) + ".e30.x", identity.ErrMalformed},
		{"kid ../../etc/passwd", func() string {
			k := pathKid
			return issuertest.Sign(t, k.WithKid("../../etc/passwd"), f.is.Claims(audience, "mcp", now))
		}(), identity.ErrSignature},
		{"1 MB", strings.Repeat("a", 1<<20), identity.ErrTooLarge},
		{"bad signature on the issuer's key", func() string {
			tok := valid(nil)
			return tok[:len(tok)-4] + "AAAA"
		}(), identity.ErrSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ti, err := f.verify(tc.token)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v, want accepted", err)
				}
				if ti.UserID != "alice" || ti.Expiration.IsZero() {
					t.Errorf("TokenInfo = %+v", ti)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("Verify: %v, want %v (and auth.ErrInvalidToken)", err, tc.want)
			}
			if len(tc.token) > 8 && strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error quotes the token: %v", err)
			}
		})
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name   string
		claims identity.Claims
		edit   func(c map[string]any)
		want   identity.Identity
	}{
		{"defaults, scope", identity.Claims{}, func(c map[string]any) { c["groups"] = []any{"eng", "ops"} },
			identity.Identity{Subject: "alice", Client: "cli", Scopes: []string{"mcp", "read"}, Groups: []string{"eng", "ops"}}},
		{"defaults, scp", identity.Claims{}, func(c map[string]any) { delete(c, "scope"); c["scp"] = []any{"mcp", "write"} },
			identity.Identity{Subject: "alice", Client: "cli", Scopes: []string{"mcp", "write"}}},
		{"azp for the client", identity.Claims{}, func(c map[string]any) { delete(c, "client_id"); c["azp"] = "app" },
			identity.Identity{Subject: "alice", Client: "app", Scopes: []string{"mcp", "read"}}},
		{"configured names", identity.Claims{Subject: "email", Client: "cid", Scopes: "perms", Groups: "roles"}, func(c map[string]any) {
			c["email"], c["cid"], c["perms"], c["roles"] = "a@example.com", "tool", []any{"x"}, "admin dev"
		}, identity.Identity{Subject: "a@example.com", Client: "tool", Scopes: []string{"x"}, Groups: []string{"admin", "dev"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, tc.claims)
			c := f.is.Claims(audience, "mcp read", f.start)
			tc.edit(c)
			ti, err := f.verify(f.is.Token(t, c))
			if err != nil {
				t.Fatal(err)
			}
			id := identity.FromTokenInfo(ti)
			if id == nil || id.Claims["iss"] != f.is.URL() {
				t.Fatalf("identity %+v, want one with the claims", id)
			}
			if diff := cmp.Diff(tc.want, *id, cmpopts.IgnoreFields(identity.Identity{}, "Claims")); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.Scopes, ti.Scopes); diff != "" {
				t.Errorf("TokenInfo.Scopes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRotation: a key the issuer just added is accepted with no restart,
// after one refetch of the JWKS, once the refetch interval has passed
// since the last fetch.
func TestRotation(t *testing.T) {
	f := setup(t, identity.Claims{})
	if _, err := f.verify(f.is.Token(t, f.is.Claims(audience, "mcp", f.start))); err != nil {
		t.Fatal(err)
	}
	if n := f.is.Fetches(); n != 1 {
		t.Fatalf("%d JWKS fetches, want 1", n)
	}
	f.is.AddKey(t, jose.RS256) // right after the first keys: no wait
	if _, err := f.verify(f.is.Token(t, f.is.Claims(audience, "mcp", f.clk.Now()))); err != nil {
		t.Fatalf("a token by the new key: %v", err)
	}
	if n := f.is.Fetches(); n != 2 {
		t.Errorf("%d JWKS fetches, want 2", n)
	}
	f.is.AddKey(t, jose.RS256)
	f.clk.Add(identity.DefaultRefetchInterval)
	if _, err := f.verify(f.is.Token(t, f.is.Claims(audience, "mcp", f.clk.Now()))); err != nil {
		t.Fatalf("a token by a key added an interval later: %v", err)
	}
	if n := f.is.Fetches(); n != 3 {
		t.Errorf("%d JWKS fetches, want 3", n)
	}
}

// TestUnknownKeyBurst: tokens by keys the issuer never had refetch the JWKS
// at most once per interval, however many come.
func TestUnknownKeyBurst(t *testing.T) {
	f := setup(t, identity.Claims{})
	if _, err := f.verify(f.is.Token(t, f.is.Claims(audience, "mcp", f.start))); err != nil {
		t.Fatal(err)
	}
	stranger := issuertest.NewKey(t, jose.ES256)
	burst := func() {
		var wg sync.WaitGroup
		errs := make([]error, 100)
		for i := range errs {
			tok := issuertest.Sign(t, stranger.WithKid("x"+string(rune('a'+i%26))), f.is.Claims(audience, "mcp", f.start))
			wg.Go(func() { _, errs[i] = f.verify(tok) })
		}
		wg.Wait()
		for _, err := range errs {
			if !errors.Is(err, identity.ErrSignature) {
				t.Fatalf("Verify: %v, want %v", err, identity.ErrSignature)
			}
		}
	}
	burst() // the first keys do not count: one refetch
	if n := f.is.Fetches(); n != 2 {
		t.Errorf("after a burst: %d JWKS fetches, want 2", n)
	}
	burst() // within the interval of that refetch
	if n := f.is.Fetches(); n != 2 {
		t.Errorf("after a burst within the interval: %d JWKS fetches, want 2", n)
	}
	f.clk.Add(identity.DefaultRefetchInterval)
	burst()
	if n := f.is.Fetches(); n != 3 {
		t.Errorf("after a burst in the next interval: %d JWKS fetches, want 3", n)
	}
}

// TestKeysDown: while the JWKS is down, tokens by keys already fetched
// verify, the others are refused, and the outage is logged once.
func TestKeysDown(t *testing.T) {
	f := setup(t, identity.Claims{})
	tok := func() string { return f.is.Token(t, f.is.Claims(audience, "mcp", f.clk.Now())) }
	if _, err := f.verify(tok()); err != nil {
		t.Fatal(err)
	}
	f.is.SetDown(true)
	f.is.AddKey(t, jose.ES256)
	for range 3 {
		f.clk.Add(identity.DefaultRefetchInterval)
		if _, err := f.verify(tok()); !errors.Is(err, identity.ErrKeysUnavailable) {
			t.Fatalf("a new key while the JWKS is down: %v, want %v", err, identity.ErrKeysUnavailable)
		}
	}
	if n := f.log.count("unreachable"); n != 1 {
		t.Errorf("%d log lines of the outage, want 1:\n%s", n, f.log.b.String())
	}
	// The first key, fetched before the outage, still verifies.
	if _, err := f.verify(f.is.Oldest(t, f.is.Claims(audience, "mcp", f.clk.Now()))); err != nil {
		t.Fatalf("a known key while the JWKS is down: %v", err)
	}
	f.is.SetDown(false)
	f.clk.Add(identity.DefaultRefetchInterval)
	if _, err := f.verify(tok()); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
	if n := f.log.count("reachable again"); n != 1 {
		t.Errorf("%d log lines of the recovery, want 1", n)
	}
}

// TestVerifiedOnce: a JWT verified once is not verified again (a second
// Verify allocates next to nothing) until it expires, when it is refused
// as expired; each caller gets its own TokenInfo.
func TestVerifiedOnce(t *testing.T) {
	f := setup(t, identity.Claims{})
	claims := f.is.Claims(audience, "mcp", f.start)
	claims["exp"] = f.start.Add(time.Minute).Unix()
	tok := f.is.Token(t, claims)
	first, err := f.verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	first.UserID = "mallory"
	if allocs := testing.AllocsPerRun(100, func() {
		if ti, err := f.verify(tok); err != nil || ti.UserID != "alice" {
			t.Fatalf("Verify again = %+v, %v; want alice's", ti, err)
		}
	}); allocs > 4 {
		t.Errorf("Verify of a token verified already: %v allocations, want at most 4 (not verified again)", allocs)
	}
	f.clk.Add(time.Minute + identity.DefaultLeeway)
	if _, err := f.verify(tok); err != nil {
		t.Errorf("Verify at exp and the leeway: %v, want accepted", err)
	}
	f.clk.Add(time.Second)
	if _, err := f.verify(tok); !errors.Is(err, identity.ErrExpired) {
		t.Errorf("Verify past exp and the leeway: %v, want %v", err, identity.ErrExpired)
	}
}
