package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// pings returns a JSON-RPC batch of n pings.
func pings(n int) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// TestLongBatchIsRefused: on a session of revision 2025-03-26, which has
// batches, a batch of up to MaxBatch messages is served; a longer one, and
// the 30,000 pings of an attack, get 400 naming the limit, before any is
// handled; the session goes on.
func TestLongBatchIsRefused(t *testing.T) {
	_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)}, nil)
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	const batches = "2025-03-26" // the last revision with batches
	session := initAt(t, hs.URL+"/mcp", batches)
	post := func(body string) (int, string) {
		t.Helper()
		_, code, answer := postAt(t, hs.URL+"/mcp", batches, session, body)
		return code, answer
	}
	for _, tc := range []struct {
		name, body string
		want       int
		says       string
	}{
		{"a batch of 2", pings(2), http.StatusOK, `"id":2`},
		{"a batch at the limit", " \n" + pings(MaxBatch), http.StatusOK, fmt.Sprintf(`"id":%d`, MaxBatch)},
		{"a batch over the limit", pings(MaxBatch + 1), http.StatusBadRequest, fmt.Sprintf("batch of more than %d messages", MaxBatch)},
		{"30,000 pings", pings(30000), http.StatusBadRequest, fmt.Sprintf("batch of more than %d messages", MaxBatch)},
		{"one ping after", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, http.StatusOK, `"result":{}`},
	} {
		code, body := post(tc.body)
		if code != tc.want || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %.200q, want %d saying %q", tc.name, code, body, tc.want, tc.says)
		}
	}
}
