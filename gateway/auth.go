package gateway

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized requires the bearer token, if one is configured. The token is
// compared in constant time and never forwarded: upstreams use only their
// own configured headers.
func (g *Gateway) authorized(next http.Handler) http.Handler {
	if g.opts.AuthToken == "" {
		return next
	}
	want := []byte(g.opts.AuthToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110, section 11.1).
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			http.Error(w, "unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
