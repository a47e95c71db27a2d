package gateway

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"
)

// bearsToken reports whether r carries token as its bearer token,
// compared in constant time; false if token is "".
func bearsToken(token string, r *http.Request) bool {
	// The scheme is case-insensitive (RFC 9110, section 11.1).
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return token != "" && ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// authorized requires token as the bearer token, if it is not "". The
// token is compared in constant time and never forwarded: upstreams use
// only their own configured headers.
func authorized(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearsToken(token, r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			refuse(w, r, "unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers r with code and msg, without reading its body, and ends
// its connection: the server would otherwise read what is left of the body
// (up to 256 KiB) before it answers, and again before it closes, from a
// client that may never send it.
func refuse(w http.ResponseWriter, r *http.Request, msg string, code int) {
	w.Header().Set("Connection", "close")
	if r.ProtoMajor == 1 {
		// Over HTTP/2, an expired deadline resets the stream, answer and
		// all; its server reads no body on its own.
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	http.Error(w, msg, code)
}
