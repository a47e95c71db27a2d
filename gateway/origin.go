package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// guarded refuses, with 403, what a page in a browser could send the
// gateway by DNS rebinding or from another site: a request whose Origin is
// neither loopback (any port) nor one of Options.AllowOrigins, and a
// request that reached a loopback address under another host's name. The
// go-sdk does the second for /mcp; this does both for every endpoint it
// guards.
func guarded(allow []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !allowedOrigin(allow, origin) {
			refuse(w, r, fmt.Sprintf("forbidden: origin %q is not allowed (see --allow-origin)", origin), http.StatusForbidden)
			return
		}
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopbackHost(local.String()) && !isLoopbackHost(r.Host) {
			refuse(w, r, fmt.Sprintf("forbidden: host %q does not name this loopback listener", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedOrigin reports whether origin is loopback or allowed.
func allowedOrigin(allow []string, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // "null", or not an origin
	}
	if isLoopbackHost(u.Host) {
		return true
	}
	for _, allowed := range allow {
		if strings.EqualFold(allowed, u.Scheme+"://"+u.Host) {
			return true
		}
	}
	return false
}

// isLoopbackHost reports whether hostport (a host, with or without a port)
// names a loopback address: localhost, or a loopback IP.
func isLoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// CheckOrigin checks an origin given to Options.AllowOrigins: a scheme
// (http or https) and a host, with an optional port, and nothing else. It
// returns the origin as the gateway compares it.
func CheckOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("origin %q: want a scheme and a host, such as https://app.example.com or http://localhost:6274", origin)
	}
	return u.Scheme + "://" + u.Host, nil
}
