package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

// GatewayLimits is "gateway.limits": token buckets that bound the requests
// that reach servers (tools/call, prompts/get, resources/read,
// completion/complete, resources/subscribe). A request takes a token from
// each bucket that applies, or from none.
type GatewayLimits struct {
	// PerIdentity, if set, is one bucket per identity (the token's
	// subject; one shared identity without gateway.auth), across servers.
	PerIdentity *RateLimit
	// PerServer, if set, is one bucket per server, across identities.
	PerServer *ServerLimits
	// Redis, if set, holds the buckets, so that replicas that share it
	// are limited as one; otherwise each process holds its own.
	Redis *LimitsRedis
}

// RateLimit is one token bucket: Rate tokens a second, up to Burst.
type RateLimit struct {
	Rate  float64 // requests a second, > 0
	Burst int     // > 0; default: Rate rounded up
}

// ServerLimits is "gateway.limits.perServer".
type ServerLimits struct {
	// Default applies to each server not in Servers; a zero Rate: none.
	Default RateLimit
	// Servers override Default for the servers they name.
	Servers map[string]RateLimit
}

// For returns the limit of the server called name, and whether it has one.
func (s *ServerLimits) For(name string) (RateLimit, bool) {
	if s == nil {
		return RateLimit{}, false
	}
	if l, ok := s.Servers[name]; ok {
		return l, true
	}
	return s.Default, s.Default.Rate > 0
}

// LimitsRedis is "gateway.limits.redis".
type LimitsRedis struct {
	// URL is redis://host:port/db (or rediss:// for TLS), without a
	// password.
	URL string
	// PasswordEnv, if set, names the environment variable that holds the
	// password (never in the file).
	PasswordEnv string
}

// ErrGatewayLimits means "gateway.limits" is invalid. It fails the whole
// file: a gateway must not run unlimited because its limits were mistyped.
var ErrGatewayLimits = errors.New("invalid gateway limits setting")

// gatewayLimits reads "gateway.limits"; on error, field is the dotted path
// of the bad part below it.
func gatewayLimits(v *hujson.Value) (_ *GatewayLimits, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, "", fmt.Errorf(`%w: want an object with "perIdentity", "perServer" or "redis"`, ErrGatewayLimits)
	}
	l := &GatewayLimits{}
	for i := range obj.Members {
		m := &obj.Members[i]
		name := memberName(m)
		var sub string
		var err error
		switch name {
		case "perIdentity":
			var r RateLimit
			r, sub, err = rateLimit(&m.Value, false)
			l.PerIdentity = &r
		case "perServer":
			l.PerServer, sub, err = serverLimits(&m.Value)
		case "redis":
			l.Redis, sub, err = limitsRedis(&m.Value)
		default:
			err = fmt.Errorf(`%w: unknown field; want "perIdentity", "perServer" or "redis"`, ErrGatewayLimits)
		}
		if err != nil {
			return nil, joinField(name, sub), err
		}
	}
	return l, "", nil
}

// rateLimit reads {"rate": R, "burst": B}; with optionalRate, a missing
// rate is the zero RateLimit (no limit).
func rateLimit(v *hujson.Value, optionalRate bool) (_ RateLimit, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return RateLimit{}, "", fmt.Errorf(`%w: want an object with "rate" (requests a second) and "burst"`, ErrGatewayLimits)
	}
	var r RateLimit
	burstSet := false
	for i := range obj.Members {
		m := &obj.Members[i]
		switch name := memberName(m); name {
		case "rate":
			lit, ok := literal(&m.Value)
			f, err := strconv.ParseFloat(string(lit), 64)
			if !ok || lit.Kind() != '0' || err != nil || !(f > 0) || math.IsInf(f, 0) {
				return RateLimit{}, name, fmt.Errorf("%w: want a positive number of requests a second, such as 10 or 0.5", ErrGatewayLimits)
			}
			r.Rate = f
		case "burst":
			lit, ok := literal(&m.Value)
			n, err := strconv.Atoi(string(lit))
			if !ok || lit.Kind() != '0' || err != nil || n < 1 {
				return RateLimit{}, name, fmt.Errorf("%w: want a positive whole number of requests", ErrGatewayLimits)
			}
			r.Burst, burstSet = n, true
		case "servers":
			if optionalRate {
				continue // the caller's
			}
			fallthrough
		default:
			return RateLimit{}, name, fmt.Errorf(`%w: unknown field; want "rate" or "burst"`, ErrGatewayLimits)
		}
	}
	switch {
	case r.Rate == 0 && burstSet:
		return RateLimit{}, "rate", fmt.Errorf(`%w: missing; "burst" needs a rate, in requests a second`, ErrGatewayLimits)
	case r.Rate == 0 && !optionalRate:
		return RateLimit{}, "rate", fmt.Errorf("%w: missing; want a positive number of requests a second", ErrGatewayLimits)
	case r.Rate > 0 && !burstSet:
		r.Burst = int(max(1, min(math.Ceil(r.Rate), math.MaxInt32)))
	}
	return r, "", nil
}

// serverLimits reads "gateway.limits.perServer": a rate limit for every
// server, and "servers" to override it per server.
func serverLimits(v *hujson.Value) (_ *ServerLimits, field string, _ error) {
	def, field, err := rateLimit(v, true)
	if err != nil {
		return nil, field, err
	}
	s := &ServerLimits{Default: def}
	obj := v.Value.(*hujson.Object) // rateLimit checked
	for i := range obj.Members {
		m := &obj.Members[i]
		if memberName(m) != "servers" {
			continue
		}
		servers, ok := m.Value.Value.(*hujson.Object)
		if !ok {
			return nil, "servers", fmt.Errorf(`%w: want an object of server names, each with {"rate", "burst"}`, ErrGatewayLimits)
		}
		s.Servers = make(map[string]RateLimit, len(servers.Members))
		for j := range servers.Members {
			name := memberName(&servers.Members[j])
			r, sub, err := rateLimit(&servers.Members[j].Value, false)
			if err != nil {
				return nil, joinField("servers."+name, sub), err
			}
			s.Servers[name] = r
		}
	}
	if s.Default.Rate == 0 && len(s.Servers) == 0 {
		return nil, "rate", fmt.Errorf(`%w: missing; want a positive number of requests a second (or "servers", each with its own)`, ErrGatewayLimits)
	}
	return s, "", nil
}

// limitsRedis reads "gateway.limits.redis".
func limitsRedis(v *hujson.Value) (_ *LimitsRedis, field string, _ error) {
	const example = "redis://redis:6379/0"
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, "", fmt.Errorf(`%w: want an object with "url" (and "passwordEnv" if it needs a password)`, ErrGatewayLimits)
	}
	r := &LimitsRedis{}
	if field, err := readStrings(obj, ErrGatewayLimits,
		stringField{"url", &r.URL}, stringField{"passwordEnv", &r.PasswordEnv}); err != nil {
		if field == "password" {
			err = fmt.Errorf(`%w: a password does not go in the file; name the environment variable that holds it in "passwordEnv"`, ErrGatewayLimits)
		}
		return nil, field, err
	}
	if r.URL == "" {
		return nil, "url", fmt.Errorf("%w: missing; want the Redis URL, such as %q", ErrGatewayLimits, example)
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		// url's error quotes the URL, which may hold a password.
		return nil, "url", fmt.Errorf("%w: want a URL such as %q", ErrGatewayLimits, example)
	}
	if _, set := u.User.Password(); set {
		return nil, "url", fmt.Errorf(`%w: a password does not go in the file; name the environment variable that holds it in "passwordEnv"`, ErrGatewayLimits)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if _, err := strconv.Atoi(db); (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" || db != "" && err != nil || u.Fragment != "" {
		return nil, "url", fmt.Errorf("%w: want redis://host:port/db or rediss://host:port/db, such as %q", ErrGatewayLimits, example)
	}
	if r.PasswordEnv != "" && !envName.MatchString(r.PasswordEnv) {
		return nil, "passwordEnv", fmt.Errorf(`%w: want the name of an environment variable, such as "REDIS_PASSWORD" (the password itself never goes in the file)`, ErrGatewayLimits)
	}
	return r, "", nil
}
