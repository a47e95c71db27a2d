package identity_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
)

// slowTransport fails each request to the issuer after advancing clk by
// one refetch interval, as a request to an issuer that hangs until its
// timeout does; it lets through, at once, those for which pass says so.
type slowTransport struct {
	clk   *clock
	next  http.RoundTripper
	pass  func(*http.Request) bool
	calls atomic.Int32
}

func (s *slowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.pass != nil && s.pass(r) {
		return s.next.RoundTrip(r)
	}
	s.calls.Add(1)
	s.clk.Add(identity.DefaultRefetchInterval)
	return nil, context.DeadlineExceeded
}

// TestSlowIssuerDiscovery: the refetch interval counts from the end of an
// attempt at discovery, so that the requests that waited for an attempt
// that hung until its timeout do not each make another, one after the
// other, while every request waits.
func TestSlowIssuerDiscovery(t *testing.T) {
	clk := &clock{t: time.Now()}
	tr := &slowTransport{clk: clk}
	v := identity.New(identity.Config{Issuer: "https://id.example.test", Audience: audience},
		&identity.Options{Now: clk.Now, Transport: tr})
	tok := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","kid":"k"}`)) + ".e30.sig"
	for range 3 {
		if _, err := v.Verify(context.Background(), tok, nil); !errors.Is(err, identity.ErrKeysUnavailable) {
			t.Fatalf("Verify: %v, want %v", err, identity.ErrKeysUnavailable)
		}
	}
	if n := tr.calls.Load(); n != 1 {
		t.Errorf("%d attempts at discovery right after one that hung a refetch interval, want 1", n)
	}
}

// TestSlowIssuerKeys: the same for a refetch of the JWKS, for tokens with
// unknown key ids.
func TestSlowIssuerKeys(t *testing.T) {
	is := issuertest.New(t)
	clk := &clock{t: time.Now().Truncate(time.Second)}
	tr := &slowTransport{clk: clk, next: is.Transport()}
	var keysFetched atomic.Bool
	tr.pass = func(r *http.Request) bool {
		// Discovery and the first keys answer; later keys hang.
		return r.URL.Path != "/jwks" || !keysFetched.Swap(true)
	}
	v := identity.New(identity.Config{Issuer: is.URL(), Audience: audience},
		&identity.Options{Now: clk.Now, Transport: tr})
	if _, err := v.Verify(context.Background(), is.Token(t, is.Claims(audience, "mcp", clk.Now())), nil); err != nil {
		t.Fatal(err)
	}
	stranger := issuertest.NewKey(t, jose.ES256)
	for _, kid := range []string{"x", "y", "z"} {
		tok := issuertest.Sign(t, stranger.WithKid(kid), is.Claims(audience, "mcp", clk.Now()))
		if _, err := v.Verify(context.Background(), tok, nil); err == nil {
			t.Fatal("a token by an unknown key verified")
		}
	}
	if n := tr.calls.Load(); n != 1 {
		t.Errorf("%d refetches of the JWKS right after one that hung a refetch interval, want 1", n)
	}
}
