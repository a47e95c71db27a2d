package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

// reconnectWait bounds how long POST /admin/reconnect/{server} waits for
// the server's new connection.
const reconnectWait = time.Minute

// reconnected is the answer of /admin/reconnect: the server's state after
// the attempt, and its error, for people (see ServerStatus.ErrorText).
type reconnected struct {
	Server string `json:"server"`
	State  string `json:"state"`
	Error  string `json:"error,omitempty"`
}

// adminReconnect reconnects one server now, forgiving its past crashes
// (a crash loop ends), and answers its state once the attempt ended: 200
// if it is connected, 502 if not, 404 for a server that is not configured,
// 409 for one that cannot be reconnected (disabled, say).
func (e *endpoints) adminReconnect(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("server")
	ctx, cancel := context.WithTimeout(r.Context(), reconnectWait)
	defer cancel()
	err := e.m.Reconnect(ctx, name)
	switch {
	case errors.Is(err, switchboard.ErrUnknownServer):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no server is configured as " + name})
		return
	case err != nil: // disabled, rejected by the config, or the gateway is closing
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	e.hooks.Settle(ctx) // the status as of the attempt
	for _, s := range e.m.Status() {
		if s.Name != name {
			continue
		}
		code := http.StatusOK
		if s.State != switchboard.StateConnected {
			code = http.StatusBadGateway
		}
		writeJSON(w, code, reconnected{Server: name, State: s.State.String(), Error: s.ErrorText()})
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no server is configured as " + name})
}
