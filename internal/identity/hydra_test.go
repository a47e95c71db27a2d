package identity_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/switchboard-mcp/switchboard/internal/hydratest"
	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
)

// TestHydra verifies the tokens of a real authorization server, Ory Hydra
// (internal/hydratest: skipped without its binary, required in CI): two
// clients with different scopes, a token for another audience, a key the
// issuer has just added (accepted with no restart), a token past its
// lifespan (refused beyond the leeway, on the verifier's clock), a token of
// another Hydra, a token with "alg": "none" and one signed by a key the
// issuer never had.
func TestHydra(t *testing.T) {
	h := hydratest.Start(t)
	const audience = "https://mcp.example.test/mcp"
	readerID, readerSecret := h.Client(t, "reader", []string{"mcp", "memory"}, []string{audience, "https://other.example.test"})
	writerID, writerSecret := h.Client(t, "writer", []string{"mcp"}, []string{audience})
	shortID, shortSecret := h.Client(t, "short", []string{"mcp"}, []string{audience}, hydratest.AccessTokenLifespan(time.Second))

	var skew atomic.Int64 // the verifier's clock runs this far ahead
	v := identity.New(identity.Config{Issuer: h.Issuer(), Audience: audience},
		&identity.Options{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	verify := func(token string) (*identity.Identity, error) {
		ti, err := v.Verify(t.Context(), token, nil)
		if err != nil {
			return nil, err
		}
		return identity.FromTokenInfo(ti), nil
	}

	for _, c := range []struct {
		id, secret string
		scopes     []string
	}{{readerID, readerSecret, []string{"mcp", "memory"}}, {writerID, writerSecret, []string{"mcp"}}} {
		id, err := verify(h.Token(t, c.id, c.secret, c.scopes, audience))
		if err != nil {
			t.Fatalf("%s's token: %v", c.id, err)
		}
		if id.Client != c.id || id.Subject != c.id || !slices.Equal(id.Scopes, c.scopes) {
			t.Errorf("%s's identity: client %q, subject %q, scopes %q; want %s, %s, %q", c.id, id.Client, id.Subject, id.Scopes, c.id, c.id, c.scopes)
		}
	}

	if _, err := verify(h.Token(t, readerID, readerSecret, []string{"mcp"}, "https://other.example.test")); !errors.Is(err, identity.ErrAudience) {
		t.Errorf("a token for another audience: %v, want ErrAudience", err)
	}

	kid := h.RotateKey(t)
	rotated := h.Token(t, writerID, writerSecret, []string{"mcp"}, audience)
	if got := headerOf(t, rotated).KeyID; got != kid {
		t.Fatalf("after RotateKey, a token signed by %q, want %q", got, kid)
	}
	if _, err := verify(rotated); err != nil {
		t.Errorf("a token signed by the key the issuer just added: %v", err)
	}

	short := h.Token(t, shortID, shortSecret, []string{"mcp"}, audience)
	skew.Store(int64(identity.DefaultLeeway - time.Second)) // expired, within the leeway
	if _, err := verify(short); err != nil {
		t.Errorf("a token 1 s past its expiry, within the leeway: %v", err)
	}
	skew.Store(int64(2 * time.Minute))
	if _, err := verify(short); !errors.Is(err, identity.ErrExpired) {
		t.Errorf("a token 2 minutes past its expiry: %v, want ErrExpired", err)
	}
	skew.Store(0)

	other := hydratest.Start(t)
	oid, osecret := other.Client(t, "reader", []string{"mcp"}, []string{audience})
	if _, err := verify(other.Token(t, oid, osecret, []string{"mcp"}, audience)); !errors.Is(err, identity.ErrIssuer) && !errors.Is(err, identity.ErrSignature) {
		t.Errorf("a token of another issuer: %v, want ErrIssuer or ErrSignature", err)
	}

	good := h.Token(t, readerID, readerSecret, []string{"mcp"}, audience)
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	if _, err := verify(none); err == nil || !errors.Is(err, identity.ErrAlgorithm) && !errors.Is(err, identity.ErrMalformed) {
		t.Errorf(`a token with "alg": "none": %v, want ErrAlgorithm or ErrMalformed`, err)
	}
	var claims map[string]any
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	forged := issuertest.Sign(t, issuertest.NewKey(t, jose.ES256), claims)
	if _, err := verify(forged); !errors.Is(err, identity.ErrSignature) {
		t.Errorf("Hydra's claims signed by a key it never had: %v, want ErrSignature", err)
	}
}

// headerOf returns the JOSE header of a compact JWS.
func headerOf(t *testing.T, token string) jose.Header {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.ES256, jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	return jws.Signatures[0].Header
}

// TestHydraIntrospection: an opaque token of a real Hydra is verified by
// introspection at its admin endpoint, and yields the client's identity
// and scopes; a token for another audience and a made-up one are refused;
// a JWT of the same Hydra is still verified locally.
func TestHydraIntrospection(t *testing.T) {
	h := hydratest.Start(t)
	const audience = "https://mcp.example.test/mcp"
	opaqueID, opaqueSecret := h.Client(t, "opaque", []string{"mcp", "memory:read"}, []string{audience, "https://other.example.test"}, hydratest.OpaqueTokens())
	jwtID, jwtSecret := h.Client(t, "jwt", []string{"mcp"}, []string{audience})
	v := identity.New(identity.Config{Issuer: h.Issuer(), Audience: audience,
		Introspection: &identity.Introspection{URL: h.IntrospectionURL()}}, nil)

	token := h.Token(t, opaqueID, opaqueSecret, []string{"mcp", "memory:read"}, audience)
	if !strings.HasPrefix(token, "ory_at_") {
		t.Fatalf("Hydra gave %.10s..., not an opaque token", token)
	}
	ti, err := v.Verify(t.Context(), token, nil)
	if err != nil {
		t.Fatalf("Hydra's opaque token: %v", err)
	}
	id := identity.FromTokenInfo(ti)
	if id.Subject != opaqueID || id.Client != opaqueID || !slices.Equal(id.Scopes, []string{"mcp", "memory:read"}) || ti.UserID != opaqueID {
		t.Errorf("identity: subject %q, client %q, scopes %q; want %s, %s, [mcp memory:read]", id.Subject, id.Client, id.Scopes, opaqueID, opaqueID)
	}
	if d := time.Until(ti.Expiration); d < 50*time.Minute || d > time.Hour+time.Minute {
		t.Errorf("expiry in %v, want Hydra's hour", d)
	}

	other := h.Token(t, opaqueID, opaqueSecret, []string{"mcp"}, "https://other.example.test")
	if _, err := v.Verify(t.Context(), other, nil); !errors.Is(err, identity.ErrAudience) {
		t.Errorf("an opaque token for another audience: %v, want ErrAudience", err)
	}
	if _, err := v.Verify(t.Context(), "ory_at_"+strings.Repeat("A", 43)+"."+strings.Repeat("B", 43), nil); !errors.Is(err, identity.ErrInactive) {
		t.Errorf("a made-up token: %v, want ErrInactive", err)
	}
	if _, err := v.Verify(t.Context(), h.Token(t, jwtID, jwtSecret, []string{"mcp"}, audience), nil); err != nil {
		t.Errorf("a JWT of the same Hydra: %v", err)
	}
}
