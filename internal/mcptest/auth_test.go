package mcptest

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// TestAuthServerIsStrict: the AuthServer refuses what a real authorization
// server refuses, so that a login that forgets PKCE, the resource or its
// own redirect URI fails in tests: an authorization request without a
// challenge or the protected resource gets an error on the redirect, and a
// code is exchanged once, with its verifier, by its client, for its
// redirect URI and resource.
func TestAuthServerIsStrict(t *testing.T) {
	a := NewAuthServer(map[string]http.Handler{"/mcp": http.NotFoundHandler()})
	t.Cleanup(a.Close)
	const redirect = "http://127.0.0.1:1/callback"
	cfg := &oauth2.Config{ClientID: "c", RedirectURL: redirect, Endpoint: oauth2.Endpoint{AuthURL: a.URL + "/authorize", TokenURL: a.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	resource := oauth2.SetAuthURLParam("resource", a.URL+"/mcp")
	verifier := oauth2.GenerateVerifier()

	for _, tc := range []struct {
		name string
		opts []oauth2.AuthCodeOption
		want string
	}{
		{"no PKCE", []oauth2.AuthCodeOption{resource}, "invalid_request"},
		{"no resource", []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, "invalid_target"},
		{"another resource", []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", a.URL+"/other")}, "invalid_target"},
	} {
		if got := redirectError(t, cfg.AuthCodeURL("st", tc.opts...)); got != tc.want {
			t.Errorf("%s: the redirect carries error %q, want %q", tc.name, got, tc.want)
		}
	}

	code := func() string {
		t.Helper()
		res, err := Headless(t.Context(), &auth.AuthorizationArgs{URL: cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), resource)})
		if err != nil || res.Code == "" || res.State != "st" {
			t.Fatalf("no code, or not with its state: %+v %v", res, err)
		}
		return res.Code
	}
	refused := func(step string, err error) {
		t.Helper()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
			t.Errorf("%s: %v, want invalid_grant", step, err)
		}
	}
	ctx := t.Context()
	c := code()
	_, err := cfg.Exchange(ctx, c, oauth2.VerifierOption(oauth2.GenerateVerifier()), resource)
	refused("another verifier", err)
	_, err = cfg.Exchange(ctx, c, oauth2.VerifierOption(verifier), resource)
	refused("a code refused once, tried again", err)

	other := *cfg
	other.RedirectURL = "http://127.0.0.1:2/callback"
	_, err = other.Exchange(ctx, code(), oauth2.VerifierOption(verifier), resource)
	refused("another redirect URI", err)
	other = *cfg
	other.ClientID = "d"
	_, err = other.Exchange(ctx, code(), oauth2.VerifierOption(verifier), resource)
	refused("another client", err)
	_, err = cfg.Exchange(ctx, code(), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", a.URL+"/other"))
	refused("another resource", err)

	c = code()
	if _, err := cfg.Exchange(ctx, c, oauth2.VerifierOption(verifier), resource); err != nil {
		t.Fatalf("the right exchange: %v", err)
	}
	_, err = cfg.Exchange(ctx, c, oauth2.VerifierOption(verifier), resource)
	refused("a code used twice", err)
	if logins, _ := a.Counts(); logins != 1 {
		t.Errorf("%d logins counted, want 1", logins)
	}
}

// redirectError returns the error that the redirect of the authorization
// request authURL carries.
func redirectError(t *testing.T, authURL string) string {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	to, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return to.Query().Get("error")
}
