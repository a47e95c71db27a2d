package gateway

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
)

// endpoints serve the gateway's HTTP endpoints besides /mcp: health,
// readiness, status and the admin's reconnect.
type endpoints struct {
	m        *switchboard.Manager
	hooks    hooks.Gateway
	opts     *Options
	registry *registry
	sessions *sessions
	started  time.Time
	reload   atomic.Pointer[reload] // the last config reload, if any
}

// A reload is the outcome of a config reload.
type reload struct {
	at  time.Time
	err string
}

// writeJSON answers with body as JSON, never cached.
func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}
