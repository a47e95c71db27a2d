package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/switchboard-mcp/switchboard/internal/policy"
)

// Gateway is the top-level "gateway": how `switchboard serve` admits and
// treats its clients.
type Gateway struct {
	// Auth, if set, makes the gateway's /mcp an OAuth 2.1 protected
	// resource. It comes whole from the file of highest precedence that
	// sets it.
	Auth *GatewayAuth
	// Policies are the rules of what each identity may see and use, in
	// order, checked at load (see [PolicyRule]). They come whole from the
	// file of highest precedence that sets "policies"; nil if none does,
	// and empty (not nil) if it sets an empty list. No rules allow
	// everything; once there is one, what no rule allows is denied.
	Policies []PolicyRule
	// Audit, if set, is where the gateway writes its audit log. It comes
	// whole from the file of highest precedence that sets it.
	Audit *GatewayAudit
	// Limits, if set, are the gateway's rate limits. They come whole from
	// the file of highest precedence that sets them.
	Limits *GatewayLimits
}

// GatewayAudit is "gateway.audit": the gateway's audit log.
type GatewayAudit struct {
	// File is the log's path, "-" for standard output. Lines are appended,
	// the chain going on from the file's last line; a new file gets mode
	// 0600.
	File string
	// MaxSizeMB ("maxSizeMB") is the size, in MiB, past which the file is
	// rotated to File.1 (File.1 to File.2, and so on). 0 never rotates;
	// absent is DefaultAuditMaxSizeMB. Standard output never rotates.
	MaxSizeMB int64
	// MaxFiles ("maxFiles") is how many rotated files are kept, File.1 to
	// File.MaxFiles; an older one is removed. Absent is
	// DefaultAuditMaxFiles.
	MaxFiles int
}

// The defaults and bounds of "gateway.audit"'s rotation.
const (
	DefaultAuditMaxSizeMB = 100
	DefaultAuditMaxFiles  = 10
	MaxAuditMaxSizeMB     = 1 << 20 // 1 TiB
	MaxAuditMaxFiles      = 1000
)

// ErrGatewayAudit means "gateway.audit" is invalid. It fails the whole
// file: an audit log must not be off because it was mistyped.
var ErrGatewayAudit = errors.New("invalid gateway audit setting")

// gatewayAudit reads "gateway.audit"; on error, field is the bad part
// below it.
func gatewayAudit(v *hujson.Value) (_ *GatewayAudit, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, "", fmt.Errorf(`%w: want an object with "file"`, ErrGatewayAudit)
	}
	a := &GatewayAudit{MaxSizeMB: DefaultAuditMaxSizeMB, MaxFiles: DefaultAuditMaxFiles}
	for i := range obj.Members {
		m := &obj.Members[i]
		switch name := memberName(m); name {
		case "file":
			lit, ok := literal(&m.Value)
			if !ok || lit.Kind() != '"' || lit.String() == "" {
				return nil, name, fmt.Errorf(`%w: want the log's path, or "-" for standard output`, ErrGatewayAudit)
			}
			a.File = lit.String()
		case "maxSizeMB":
			n, ok := wholeIn(&m.Value, 0, MaxAuditMaxSizeMB)
			if !ok {
				return nil, name, fmt.Errorf("%w: want a whole number of MiB from 0 (never rotate) to %d", ErrGatewayAudit, MaxAuditMaxSizeMB)
			}
			a.MaxSizeMB = n
		case "maxFiles":
			n, ok := wholeIn(&m.Value, 1, MaxAuditMaxFiles)
			if !ok {
				return nil, name, fmt.Errorf("%w: want a whole number of rotated files to keep, from 1 to %d", ErrGatewayAudit, MaxAuditMaxFiles)
			}
			a.MaxFiles = int(n)
		default:
			return nil, name, fmt.Errorf(`%w: unknown field; want "file", "maxSizeMB" or "maxFiles"`, ErrGatewayAudit)
		}
	}
	if a.File == "" {
		return nil, "file", fmt.Errorf(`%w: missing; want the log's path, or "-" for standard output`, ErrGatewayAudit)
	}
	return a, "", nil
}

// wholeIn reads a whole number from lo to hi.
func wholeIn(v *hujson.Value, lo, hi int64) (int64, bool) {
	lit, ok := literal(v)
	if !ok || lit.Kind() != '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return n, err == nil && lo <= n && n <= hi
}

// GatewayAuth is "gateway.auth": the authorization server whose access
// tokens the gateway accepts.
type GatewayAuth struct {
	// Issuer is the authorization server's issuer URL: https, or http on a
	// loopback host. Discovery and the JWKS come from there.
	Issuer string
	// Audience is the gateway's resource URL (such as
	// "https://mcp.example.com/mcp"): tokens must name it in aud.
	Audience string
	// Scopes are required on every request.
	Scopes []string
	// Claims name the claims that identity attributes come from.
	Claims AuthClaims
	// Introspection, if set, checks opaque access tokens (those that are
	// not JWTs) at an RFC 7662 endpoint.
	Introspection *AuthIntrospection
	// Admin, if set, is a CEL condition over identity (as a policy's
	// "when" sees it, such as "'switchboard:admin' in identity.scopes"):
	// the identities it holds for may read /status, with the policies and
	// who is connected, and /metrics, and reconnect servers. Without it,
	// no token may.
	Admin string
}

// AuthIntrospection is "gateway.auth.introspection".
type AuthIntrospection struct {
	// URL is the RFC 7662 introspection endpoint: https, or http on a
	// loopback host.
	URL string
	// ClientID, if set, authenticates the gateway to the endpoint with
	// HTTP Basic, with the secret read at start from the environment
	// variable ClientSecretEnv (never from the file).
	ClientID        string
	ClientSecretEnv string
}

// AuthClaims is "gateway.auth.claims". A field left "" takes its default:
// subject "sub", client "client_id" (else "azp"), scopes "scope" (space
// separated) or "scp" (a list), groups "groups".
type AuthClaims struct {
	Subject, Client, Scopes, Groups string
}

// Equal reports whether a and b say the same.
func (a *GatewayAuth) Equal(b *GatewayAuth) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Issuer == b.Issuer && a.Audience == b.Audience && a.Claims == b.Claims && a.Admin == b.Admin &&
		strings.Join(a.Scopes, " ") == strings.Join(b.Scopes, " ") &&
		(a.Introspection == nil) == (b.Introspection == nil) &&
		(a.Introspection == nil || *a.Introspection == *b.Introspection)
}

// ErrGatewayAuth means "gateway.auth" is invalid. It fails the whole file:
// a gateway must not run open because its authorization was mistyped.
var ErrGatewayAuth = errors.New("invalid gateway auth setting")

// gatewayLater are the keys of "gateway" that later versions read.
var gatewayLater = map[string]bool{}

// gateway reads a top-level "gateway". A bad "auth" or "policies" is an
// error, with the path below "gateway" of the bad part; other keys are
// warnings (problems with their fields). set says whether the file sets
// "auth", "policies", "audit" or "limits".
func gateway(v *hujson.Value) (g Gateway, set bool, warnings []fieldProblem, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return Gateway{}, false, nil, "", fmt.Errorf("%w: want an object", ErrGatewayAuth)
	}
	for i := range obj.Members {
		m := &obj.Members[i]
		switch name := memberName(m); {
		case name == "auth":
			a, sub, err := gatewayAuth(&m.Value)
			if err != nil {
				return Gateway{}, false, nil, joinField(name, sub), err
			}
			g.Auth, set = a, true
		case name == "policies":
			p, sub, err := gatewayPolicies(&m.Value)
			if err != nil {
				return Gateway{}, false, nil, name + sub, err
			}
			g.Policies, set = p, true
		case name == "audit":
			a, sub, err := gatewayAudit(&m.Value)
			if err != nil {
				return Gateway{}, false, nil, joinField(name, sub), err
			}
			g.Audit, set = a, true
		case name == "limits":
			l, sub, err := gatewayLimits(&m.Value)
			if err != nil {
				return Gateway{}, false, nil, joinField(name, sub), err
			}
			g.Limits, set = l, true
		case gatewayLater[name]:
			warnings = append(warnings, fieldProblem{name, "not supported by this version, ignored"})
		default:
			warnings = append(warnings, fieldProblem{name, "unknown field, ignored"})
		}
	}
	return g, set, warnings, "", nil
}

// fieldProblem is a warning about a field.
type fieldProblem struct{ field, problem string }

// gatewayAuth reads "gateway.auth"; on error, field is the dotted path of
// the bad part below it.
func gatewayAuth(v *hujson.Value) (_ *GatewayAuth, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, "", fmt.Errorf("%w: want an object with \"issuer\" and \"audience\"", ErrGatewayAuth)
	}
	a := &GatewayAuth{}
	for i := range obj.Members {
		m := &obj.Members[i]
		name := memberName(m)
		var err error
		switch name {
		case "issuer":
			a.Issuer, err = authString(&m.Value)
		case "audience":
			a.Audience, err = authString(&m.Value)
		case "scopes":
			a.Scopes, err = authScopes(&m.Value)
		case "claims":
			var sub string
			a.Claims, sub, err = authClaims(&m.Value)
			name = joinField(name, sub)
		case "introspection":
			var sub string
			a.Introspection, sub, err = authIntrospection(&m.Value)
			name = joinField(name, sub)
		case "admin":
			a.Admin, err = authString(&m.Value)
			if err == nil {
				err = checkAdmin(a.Admin)
			}
		default:
			err = fmt.Errorf("%w: unknown field; want \"issuer\", \"audience\", \"scopes\", \"claims\", \"introspection\" or \"admin\"", ErrGatewayAuth)
		}
		if err != nil {
			return nil, name, err
		}
	}
	if a.Issuer == "" {
		return nil, "issuer", fmt.Errorf("%w: missing; want the authorization server's issuer URL", ErrGatewayAuth)
	}
	if err := checkIssuer(a.Issuer); err != nil {
		return nil, "issuer", err
	}
	if a.Audience == "" {
		return nil, "audience", fmt.Errorf("%w: missing; want the gateway's resource URL, such as \"https://mcp.example.com/mcp\"", ErrGatewayAuth)
	}
	if u, err := url.Parse(a.Audience); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return nil, "audience", fmt.Errorf("%w: want an absolute http or https URL without a fragment, such as \"https://mcp.example.com/mcp\"", ErrGatewayAuth)
	}
	return a, "", nil
}

// checkAdmin compiles the condition of "gateway.auth.admin".
func checkAdmin(expr string) error {
	if strings.TrimSpace(expr) == "" {
		return fmt.Errorf("%w: want a CEL condition over identity, such as \"'switchboard:admin' in identity.scopes\"", ErrGatewayAuth)
	}
	var re *policy.RuleError
	if _, err := policy.New([]policy.Rule{{When: expr}}, nil); errors.As(err, &re) {
		return fmt.Errorf("%w: %s", ErrGatewayAuth, re.Problem())
	} else if err != nil {
		return fmt.Errorf("%w: %w", ErrGatewayAuth, err)
	}
	return nil
}

// checkIssuer requires an absolute https URL, or http on a loopback host,
// with no query, fragment or user.
func checkIssuer(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.RawQuery != "" {
		return fmt.Errorf("%w: want an absolute https URL, such as \"https://id.example.com\"", ErrGatewayAuth)
	}
	return checkHTTPS(u, "https://id.example.com")
}

// checkHTTPS requires an absolute https URL, or http on a loopback host,
// with no fragment or user; example is such a URL, for the error.
func checkHTTPS(u *url.URL, example string) error {
	if u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%w: want an absolute https URL, such as %q", ErrGatewayAuth, example)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("%w: http is allowed only on a loopback host; want https", ErrGatewayAuth)
	}
	return fmt.Errorf("%w: want an absolute https URL, such as %q", ErrGatewayAuth, example)
}

// authIntrospection reads "gateway.auth.introspection"; on error, field is
// the bad part below it.
func authIntrospection(v *hujson.Value) (_ *AuthIntrospection, field string, _ error) {
	const example = "https://id.example.com/oauth2/introspect"
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, "", fmt.Errorf("%w: want an object with \"url\" (and \"clientId\" and \"clientSecretEnv\" if the endpoint asks for them)", ErrGatewayAuth)
	}
	in := &AuthIntrospection{}
	for i := range obj.Members {
		m := &obj.Members[i]
		name := memberName(m)
		var err error
		switch name {
		case "url":
			in.URL, err = authString(&m.Value)
		case "clientId":
			in.ClientID, err = authString(&m.Value)
		case "clientSecretEnv":
			in.ClientSecretEnv, err = authString(&m.Value)
			if err == nil && !envName.MatchString(in.ClientSecretEnv) {
				err = fmt.Errorf("%w: want the name of an environment variable, such as \"INTROSPECTION_SECRET\" (the secret itself never goes in the file)", ErrGatewayAuth)
			}
		case "clientSecret":
			err = fmt.Errorf("%w: a secret does not go in the file; name the environment variable that holds it in \"clientSecretEnv\"", ErrGatewayAuth)
		default:
			err = fmt.Errorf("%w: unknown field; want \"url\", \"clientId\" or \"clientSecretEnv\"", ErrGatewayAuth)
		}
		if err != nil {
			return nil, name, err
		}
	}
	if in.URL == "" {
		return nil, "url", fmt.Errorf("%w: missing; want the RFC 7662 introspection endpoint, such as %q", ErrGatewayAuth, example)
	}
	u, err := url.Parse(in.URL)
	if err != nil {
		return nil, "url", fmt.Errorf("%w: want an absolute https URL, such as %q", ErrGatewayAuth, example)
	}
	if err := checkHTTPS(u, example); err != nil {
		return nil, "url", err
	}
	switch {
	case in.ClientID != "" && in.ClientSecretEnv == "":
		return nil, "clientSecretEnv", fmt.Errorf("%w: missing; \"clientId\" needs the environment variable of its secret", ErrGatewayAuth)
	case in.ClientID == "" && in.ClientSecretEnv != "":
		return nil, "clientId", fmt.Errorf("%w: missing; \"clientSecretEnv\" needs the client ID it is the secret of", ErrGatewayAuth)
	}
	return in, "", nil
}

func authString(v *hujson.Value) (string, error) {
	lit, ok := literal(v)
	if !ok || lit.Kind() != '"' {
		return "", fmt.Errorf("%w: want a string", ErrGatewayAuth)
	}
	return lit.String(), nil
}

func authScopes(v *hujson.Value) ([]string, error) {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		return nil, fmt.Errorf("%w: want a list of scope names", ErrGatewayAuth)
	}
	var out []string
	for i := range arr.Elements {
		s, err := authString(&arr.Elements[i])
		if err != nil || s == "" || strings.ContainsAny(s, " \t\"\\") {
			return nil, fmt.Errorf("%w: [%d]: want a scope name (no spaces or quotes)", ErrGatewayAuth, i)
		}
		out = append(out, s)
	}
	return out, nil
}

func authClaims(v *hujson.Value) (_ AuthClaims, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return AuthClaims{}, "", fmt.Errorf("%w: want an object of claim names", ErrGatewayAuth)
	}
	var c AuthClaims
	if field, err := readStrings(obj, ErrGatewayAuth,
		stringField{"subject", &c.Subject}, stringField{"client", &c.Client},
		stringField{"scopes", &c.Scopes}, stringField{"groups", &c.Groups}); err != nil {
		return AuthClaims{}, field, err
	}
	return c, "", nil
}
