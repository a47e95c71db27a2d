package hydratest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// jwtParts decodes a JWT's header and claims, unverified: these tests
// check what Hydra puts in its tokens, not their signatures.
func jwtParts(t *testing.T, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	decode := func(what, part string) map[string]any {
		data, err := base64.RawURLEncoding.DecodeString(part)
		if err != nil {
			t.Fatalf("JWT %s: %v", what, err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("JWT %s: %v", what, err)
		}
		return m
	}
	return decode("header", parts[0]), decode("claims", parts[1])
}

// strs returns a JSON list of strings as a []string.
func strs(t *testing.T, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not a list", v, v)
	}
	var out []string
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("%v (%T) is not a string", e, e)
		}
		out = append(out, s)
	}
	return out
}

func TestTokensCarryIssuerAudienceAndScopes(t *testing.T) {
	h := Start(t)
	const gateway, other = "http://127.0.0.1:8080/mcp", "http://other.example/mcp"
	for _, tc := range []struct {
		id       string
		scopes   []string // registered and asked for
		audience []string // registered
		ask      string   // the audience asked for
	}{
		{id: "alice", scopes: []string{"mcp:read", "mcp:write"}, audience: []string{gateway}, ask: gateway},
		{id: "bob", scopes: []string{"memory:read"}, audience: []string{gateway, other}, ask: other},
	} {
		t.Run(tc.id, func(t *testing.T) {
			id, secret := h.Client(t, tc.id, tc.scopes, tc.audience)
			if id != tc.id {
				t.Errorf("client ID = %q, want %q", id, tc.id)
			}
			header, claims := jwtParts(t, h.Token(t, id, secret, tc.scopes, tc.ask))
			if header["alg"] != "ES256" {
				t.Errorf("alg = %v, want ES256 (the key Start makes)", header["alg"])
			}
			if claims["iss"] != h.Issuer() {
				t.Errorf("iss = %v, want %q", claims["iss"], h.Issuer())
			}
			if aud := strs(t, claims["aud"]); !slices.Contains(aud, tc.ask) {
				t.Errorf("aud = %q, want it to hold %q", aud, tc.ask)
			}
			if diff := cmp.Diff(tc.scopes, strs(t, claims["scp"])); diff != "" {
				t.Errorf("scp (-want +got):\n%s", diff)
			}
			if claims["sub"] != tc.id || claims["client_id"] != tc.id {
				t.Errorf("sub = %v, client_id = %v, want %q for both", claims["sub"], claims["client_id"], tc.id)
			}
		})
	}
}

func TestRotateKeySignsNewTokensWithTheNewKey(t *testing.T) {
	h := Start(t)
	id, secret := h.Client(t, "rotating", []string{"mcp:read"}, nil)
	before, _ := jwtParts(t, h.Token(t, id, secret, []string{"mcp:read"}, ""))

	kid := h.RotateKey(t)
	if kid == before["kid"] {
		t.Fatalf("RotateKey returned the key ID already in use, %q", kid)
	}
	after, _ := jwtParts(t, h.Token(t, id, secret, []string{"mcp:read"}, ""))
	if after["kid"] != kid {
		t.Errorf("after RotateKey, kid = %v, want %q (before: %v)", after["kid"], kid, before["kid"])
	}

	jwks := getJSON(t, h.Issuer()+"/.well-known/jwks.json")
	var kids []string
	for _, k := range jwks["keys"].([]any) {
		kids = append(kids, k.(map[string]any)["kid"].(string))
	}
	for _, want := range []string{before["kid"].(string), kid} {
		if !slices.Contains(kids, want) {
			t.Errorf("JWKS key IDs %q lack %q", kids, want)
		}
	}
}

func TestAccessTokenLifespan(t *testing.T) {
	h := Start(t)
	id, secret := h.Client(t, "shortlived", nil, nil, AccessTokenLifespan(time.Second))
	_, claims := jwtParts(t, h.Token(t, id, secret, nil, ""))
	exp, iat := claims["exp"].(float64), claims["iat"].(float64)
	if exp-iat != 1 {
		t.Errorf("exp - iat = %v, want 1", exp-iat)
	}
}

func TestOpaqueTokenIntrospectsActive(t *testing.T) {
	h := Start(t)
	const aud = "http://127.0.0.1:8080/mcp"
	id, secret := h.Client(t, "opaque", []string{"mcp:read", "memory:read"}, []string{aud}, OpaqueTokens())
	token := h.Token(t, id, secret, []string{"mcp:read", "memory:read"}, aud)
	if strings.Count(token, ".") == 2 {
		t.Fatalf("an OpaqueTokens client got a JWT")
	}
	got := h.Introspect(t, token)
	want := map[string]any{
		"active":    true,
		"client_id": "opaque",
		"sub":       "opaque",
		"scope":     "mcp:read memory:read",
		"aud":       []any{aud},
		"iss":       h.Issuer(),
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("introspection (-want +got):\n%s", diff)
	}
	if got := h.Introspect(t, "ory_at_not-a-token"); got["active"] != false {
		t.Errorf("introspecting a made-up token: %v, want active false", got)
	}
}

func TestErrorsNameTheCallAndHydrasAnswer(t *testing.T) {
	h := Start(t)
	id, secret := h.Client(t, "named", []string{"mcp:read"}, nil)
	tb := &fakeTB{TB: t}
	h.Token(tb, id, secret, []string{"mcp:write"}, "")
	for _, want := range []string{"POST /oauth2/token", "400 Bad Request", "invalid_scope"} {
		if !strings.Contains(tb.fatal, want) {
			t.Errorf("error %q does not say %q", tb.fatal, want)
		}
	}
	if strings.Contains(tb.fatal, secret) {
		t.Errorf("error %q holds the client's secret", tb.fatal)
	}
}

func TestMissingBinary(t *testing.T) {
	err := fmt.Errorf("%w at /repo/.ci/bin/hydra or on PATH", errNoBinary)
	for _, required := range []bool{false, true} {
		tb := &fakeTB{TB: t}
		reportMissing(tb, required, err)
		got, other := tb.skip, tb.fatal
		if required {
			got, other = tb.fatal, tb.skip
		}
		if other != "" || !strings.Contains(got, ".ci/install-hydra") || !strings.Contains(got, "/repo/.ci/bin/hydra") {
			t.Errorf("required=%v: skip %q, fatal %q; want one of them, naming the path and .ci/install-hydra", required, tb.skip, tb.fatal)
		}
	}
}

func TestStartRetriesWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := 0
	pickPort = func() (string, error) {
		if picks++; picks == 1 {
			return taken.Addr().String(), nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()
	h := Start(t)
	if picks < 4 {
		t.Errorf("%d ports picked, want 2 for a first attempt and 2 for the next", picks)
	}
	if h.Issuer() == "http://"+taken.Addr().String() {
		t.Errorf("Hydra's issuer is on the taken port %s", taken.Addr())
	}
	h.Client(t, "after-retry", nil, nil)
}

// fakeTB records the first Fatalf and Skipf instead of stopping the test.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, a ...any) {
	if f.fatal == "" {
		f.fatal = fmt.Sprintf(format, a...)
	}
}

func (f *fakeTB) Skipf(format string, a ...any) {
	if f.skip == "" {
		f.skip = fmt.Sprintf(format, a...)
	}
}

// getJSON fetches a JSON object.
func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: callTimeout}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v: %s", url, resp.Status, err, data)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return m
}
