package gateway

import (
	"net/http"
)

// healthz answers liveness: the process can serve. It never looks at
// upstreams.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is the body of /readyz. It carries states only: never a URL, a
// header or an error text.
type readiness struct {
	Status  string            `json:"status"`
	Servers map[string]string `json:"servers,omitzero"`
}

// readyz answers readiness from last-known state: 200 when every required
// server is connected, else 503. It opens no session. With a token
// configured, a probe needs none, but only a request with the token is told
// the servers' names and states.
func (e *endpoints) readyz(w http.ResponseWriter, r *http.Request) {
	statuses := e.m.Status()
	body := readiness{Status: "ready"}
	if e.mayName(r) {
		body.Servers = make(map[string]string, len(statuses))
		for _, s := range statuses {
			body.Servers[s.Name] = s.State.String()
		}
	}
	code := http.StatusOK
	if !statuses.Ready() {
		body.Status, code = "not_ready", http.StatusServiceUnavailable
	}
	writeJSON(w, code, body)
}

// mayName reports whether r may be told the servers' names: with no
// authentication configured, or with a valid token.
func (e *endpoints) mayName(r *http.Request) bool {
	if o := e.opts.OAuth; o != nil {
		return r.Header.Get("Authorization") != "" && o.bearsValidToken(r)
	}
	return e.opts.AuthToken == "" || bearsToken(e.opts.AuthToken, r)
}
