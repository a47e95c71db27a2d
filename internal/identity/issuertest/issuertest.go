// Package issuertest is a fake OAuth 2.1 authorization server for tests:
// an httptest server that serves OIDC discovery and a JWKS, and signs
// access tokens (JWTs) with its keys, so that every case of token
// verification is deterministic.
package issuertest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// An Issuer is a fake authorization server. Its methods are safe for
// concurrent use.
type Issuer struct {
	srv *httptest.Server

	mu      sync.Mutex
	keys    []Key // published, in order of addition
	down    bool  // the JWKS answers 503
	fetches int   // JWKS requests answered (down or not)
}

// A Key is a signing key.
type Key struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// New starts an issuer with one ES256 key; it is closed when t ends.
func New(t testing.TB) *Issuer {
	is := &Issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.URL(),
			"jwks_uri":                              is.URL() + "/jwks",
			"authorization_endpoint":                is.URL() + "/authorize",
			"token_endpoint":                        is.URL() + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		is.fetches++
		down := is.down
		var set jose.JSONWebKeySet
		for _, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
		}
		is.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	is.AddKey(t, jose.ES256)
	return is
}

// URL is the issuer's URL, as its tokens' iss.
func (is *Issuer) URL() string { return is.srv.URL }

// AddKey publishes a new key for alg (RS256 or ES256) and returns its key
// id; tokens are signed with the newest key.
func (is *Issuer) AddKey(t testing.TB, alg jose.SignatureAlgorithm) string {
	k := NewKey(t, alg)
	is.mu.Lock()
	defer is.mu.Unlock()
	k.kid = "k" + strconv.Itoa(len(is.keys)+1)
	is.keys = append(is.keys, k)
	return k.kid
}

// NewKey returns a key the issuer does not publish, for TokenWith.
func NewKey(t testing.TB, alg jose.SignatureAlgorithm) Key {
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return Key{kid: "unpublished", alg: alg, priv: priv}
}

// SetDown makes the JWKS answer 503 (true) or the keys (false).
func (is *Issuer) SetDown(down bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.down = down
}

// Fetches is how many times the JWKS was requested.
func (is *Issuer) Fetches() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.fetches
}

// Claims returns the usual claims of a token for audience with scope,
// valid for an hour from now.
func (is *Issuer) Claims(audience, scope string, now time.Time) map[string]any {
	return map[string]any{
		"iss":       is.URL(),
		"sub":       "alice",
		"client_id": "cli",
		"aud":       []string{audience},
		"scope":     scope,
		"iat":       now.Unix(),
		"exp":       now.Add(time.Hour).Unix(),
	}
}

// Token signs claims with the newest key.
func (is *Issuer) Token(t testing.TB, claims map[string]any) string {
	is.mu.Lock()
	k := is.keys[len(is.keys)-1]
	is.mu.Unlock()
	return Sign(t, k, claims)
}

// Sign signs claims with k.
func Sign(t testing.TB, k Key, claims map[string]any) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// SignHMAC signs claims with HS256 and secret (an attack: the issuer's
// public key as the secret), under key id kid.
func SignHMAC(t testing.TB, secret []byte, kid string, claims map[string]any) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: secret, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// PublicKeyJSON is the JWK of the issuer's newest public key.
func (is *Issuer) PublicKeyJSON(t testing.TB) []byte {
	is.mu.Lock()
	k := is.keys[len(is.keys)-1]
	is.mu.Unlock()
	b, err := json.Marshal(jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Transport is the client transport for the issuer's server: its idle
// connections are closed with it.
func (is *Issuer) Transport() http.RoundTripper { return is.srv.Client().Transport }

// WithKid returns k under key id kid.
func (k Key) WithKid(kid string) Key {
	k.kid = kid
	return k
}

// Oldest signs claims with the issuer's first key.
func (is *Issuer) Oldest(t testing.TB, claims map[string]any) string {
	is.mu.Lock()
	k := is.keys[0]
	is.mu.Unlock()
	return Sign(t, k, claims)
}
