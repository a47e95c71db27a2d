package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity"
	"github.com/switchboard-mcp/switchboard/internal/policy"
)

// OAuth makes the gateway an OAuth 2.1 protected resource (the MCP
// authorization spec): each request to /mcp, /metrics, /status and /admin
// must carry a bearer token that Verifier accepts and that holds Scopes,
// and the gateway publishes its protected resource metadata (RFC 9728).
// /metrics, /status and /admin are for admins alone: the identities that
// the config's "gateway.auth.admin" holds for (see [NewOAuth]); an
// OAuth made otherwise has none.
type OAuth struct {
	// Verifier verifies a token; it must return an error wrapping
	// auth.ErrInvalidToken for a token it refuses, with a message a client
	// may read. Required.
	Verifier auth.TokenVerifier
	// Resource is the gateway's resource URL, such as
	// "https://mcp.example.com/mcp": the audience its tokens name, and
	// where its metadata is found. Required.
	Resource string
	// AuthorizationServers are the issuers of its tokens, for the metadata.
	AuthorizationServers []string
	// Scopes are required on every request; a token without one of them
	// gets 403 insufficient_scope.
	Scopes []string
	// ClockSkew tolerates clock skew on a token's expiry (see
	// auth.RequireBearerTokenOptions).
	ClockSkew time.Duration

	discover func(context.Context) error // set by NewOAuth
	admin    *policy.Engine              // set by NewOAuth: allows the admins alone
}

// NewOAuth returns the OAuth of a config's "gateway.auth": its Verifier
// takes the issuer's JWT access tokens for the audience, checked against
// the keys the issuer publishes (OIDC discovery and JWKS), and, with
// "introspection", the opaque ones by RFC 7662 introspection; it reads the
// caller's identity from the configured claims. It does no I/O: see
// [OAuth.Discover]. logger receives one line per outage of the issuer or
// of the introspection endpoint. The error says that the environment
// variable of the introspection client's secret is unset or empty.
func NewOAuth(a *config.GatewayAuth, logger *slog.Logger) (*OAuth, error) {
	cfg := identity.Config{
		Issuer:   a.Issuer,
		Audience: a.Audience,
		Scopes:   a.Scopes,
		Claims:   identity.Claims{Subject: a.Claims.Subject, Client: a.Claims.Client, Scopes: a.Claims.Scopes, Groups: a.Claims.Groups},
	}
	if in := a.Introspection; in != nil {
		cfg.Introspection = &identity.Introspection{URL: in.URL, ClientID: in.ClientID}
		if in.ClientID != "" {
			cfg.Introspection.ClientSecret = os.Getenv(in.ClientSecretEnv)
			if cfg.Introspection.ClientSecret == "" {
				return nil, fmt.Errorf("gateway.auth.introspection.clientSecretEnv: the environment variable %s is unset or empty", in.ClientSecretEnv)
			}
		}
	}
	v := identity.New(cfg, &identity.Options{Logger: logger})
	var admin *policy.Engine
	if a.Admin != "" {
		var err error
		if admin, err = policy.New([]policy.Rule{{When: a.Admin}}, &policy.Options{Logger: logger}); err != nil {
			return nil, fmt.Errorf("gateway.auth.admin: %w", err)
		}
	}
	return &OAuth{
		admin:                admin,
		Verifier:             v.Verify,
		Resource:             a.Audience,
		AuthorizationServers: []string{a.Issuer},
		Scopes:               slices.Clone(a.Scopes),
		ClockSkew:            v.Leeway(),
		discover:             v.Discover,
	}, nil
}

// adminOnly lets the requests of admins through to next, which bearer has
// checked the token of, and answers the others 403.
func (o *OAuth) adminOnly(path string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !o.isAdmin(identity.FromContext(r.Context())) {
			msg := "forbidden: " + path + " is for the gateway's admins, whom gateway.auth.admin names"
			if o.admin == nil {
				msg = "forbidden: " + path + " is for the gateway's admins, and it has none: name them with gateway.auth.admin in the config"
			}
			refuse(w, r, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isAdmin reports whether id is one of the gateway's admins.
func (o *OAuth) isAdmin(id *identity.Identity) bool {
	return o.admin != nil && id != nil && o.admin.Decide(id, policy.Target{}).Allowed
}

// Discover looks the issuer of an OAuth from NewOAuth up now, rather than
// at the first token, and returns why it failed (the first token then
// tries again). For another OAuth it does nothing.
func (o *OAuth) Discover(ctx context.Context) error {
	if o.discover == nil {
		return nil
	}
	return o.discover(ctx)
}

// metadataPath is where RFC 9728 puts a protected resource's metadata.
const metadataPath = "/.well-known/oauth-protected-resource"

// metadataURL is the URL of the metadata of resource: metadataPath
// inserted between its host and its path (RFC 9728, section 3.1), and
// that path below metadataPath, which the gateway also serves.
func metadataURL(resource string) (string, string) {
	u, err := url.Parse(resource)
	if err != nil {
		return metadataPath, metadataPath
	}
	p := metadataPath + strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + p, p
}

// metadataHandlers returns the go-sdk handler of o's metadata, and the
// paths to serve it at.
func (o *OAuth) metadataHandler() (http.Handler, []string) {
	_, p := metadataURL(o.Resource)
	paths := []string{metadataPath}
	if p != metadataPath {
		paths = append(paths, p)
	}
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.Resource,
		AuthorizationServers:   o.AuthorizationServers,
		ScopesSupported:        o.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Switchboard MCP gateway",
	}), paths
}

// bearer returns the middleware that requires o's tokens: the go-sdk's
// RequireBearerToken, whose answers are completed as RFC 6750 asks (an
// error code in WWW-Authenticate) and end their connection unread (see
// refuse). The request it lets through carries the token's
// auth.TokenInfo; the token itself goes no further: upstreams use only
// their own configured headers.
func (o *OAuth) bearer() func(http.Handler) http.Handler {
	meta, _ := metadataURL(o.Resource)
	require := auth.RequireBearerToken(o.Verifier, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: meta,
		Scopes:              o.Scopes,
		ClockSkew:           o.ClockSkew,
	})
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var passed *http.Request
			check := require(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { passed = r }))
			check.ServeHTTP(&refusal{ResponseWriter: w, r: r}, r)
			if passed != nil {
				next.ServeHTTP(w, passed)
			}
		})
	}
}

// refusal is the ResponseWriter of RequireBearerToken's check, which
// writes only to refuse.
type refusal struct {
	http.ResponseWriter
	r *http.Request
}

func (f *refusal) WriteHeader(code int) {
	h := f.Header()
	if v := h.Get("WWW-Authenticate"); strings.HasPrefix(v, "Bearer ") {
		switch {
		case code == http.StatusForbidden:
			h.Set("WWW-Authenticate", `Bearer error="insufficient_scope", `+v[len("Bearer "):])
		case code == http.StatusUnauthorized && f.r.Header.Get("Authorization") != "":
			h.Set("WWW-Authenticate", `Bearer error="invalid_token", `+v[len("Bearer "):])
		}
	}
	h.Set("Connection", "close")
	if f.r.ProtoMajor == 1 {
		http.NewResponseController(f.ResponseWriter).SetReadDeadline(time.Now())
	}
	f.ResponseWriter.WriteHeader(code)
}

// identityOf returns the identity a verified token gave the request of
// extra: the identity package's, or, from another verifier, its subject
// and scopes. Nil without a token.
func identityOf(ti *auth.TokenInfo) *identity.Identity {
	if ti == nil {
		return nil
	}
	if id := identity.FromTokenInfo(ti); id != nil {
		return id
	}
	return &identity.Identity{Subject: ti.UserID, Scopes: ti.Scopes}
}

// bearsValidToken reports whether r carries a token o accepts, scopes and
// all.
func (o *OAuth) bearsValidToken(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	ti, err := o.Verifier(r.Context(), strings.TrimSpace(tok), r)
	if err != nil || ti == nil || !ti.Expiration.IsZero() && time.Now().After(ti.Expiration.Add(o.ClockSkew)) {
		return false
	}
	for _, s := range o.Scopes {
		if !slices.Contains(ti.Scopes, s) {
			return false
		}
	}
	return true
}

// recordIdentity records on a client session, as it starts (its
// notifications/initialized), who its token says the caller is. Its later
// requests are verified each in turn; the go-sdk refuses those under
// another subject.
func (s *sessions) recordIdentity(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/initialized" {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
					if st := s.of(ss); st != nil {
						st.setIdentity(identityOf(extra.TokenInfo))
					}
				}
			}
		}
		return next(ctx, method, req)
	}
}
