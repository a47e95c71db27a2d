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
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			http.Error(w, "unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
