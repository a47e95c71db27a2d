package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// mcpPost posts a JSON-RPC message to h's /mcp, for session (none if ""),
// and returns the response.
func mcpPost(h http.Handler, session, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", legacy)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// openSession opens a session on h, and returns its ID, or the response
// that refused it.
func openSession(t *testing.T, h http.Handler) (string, *httptest.ResponseRecorder) {
	t.Helper()
	w := mcpPost(h, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, legacy))
	id := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || id == "" {
		return "", w
	}
	if w := mcpPost(h, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", w.Code, w.Body)
	}
	return id, nil
}

// ping reports the status of a ping on session.
func ping(h http.Handler, session string) int {
	return mcpPost(h, session, `{"jsonrpc":"2.0","id":7,"method":"ping"}`).Code
}

// TestSessionsCapped: a new session beyond MaxSessions is refused with
// 503, Retry-After and an error naming the limit; the sessions held go on,
// and once one ends, a new one is let in.
func TestSessionsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var drops []string
		_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)},
			&Options{MaxSessions: 2, SessionDropped: func(reason string) { drops = append(drops, reason) }})
		h := g.Handler()
		var held []string
		for range 2 {
			id, refused := openSession(t, h)
			if refused != nil {
				t.Fatalf("a session within the limit: %d %s", refused.Code, refused.Body)
			}
			held = append(held, id)
		}

		_, refused := openSession(t, h)
		if refused == nil {
			t.Fatal("a third session was opened, beyond MaxSessions 2")
		}
		if refused.Code != http.StatusServiceUnavailable || refused.Header().Get("Retry-After") == "" ||
			!strings.Contains(refused.Body.String(), "too many sessions: the gateway holds 2, its limit (MaxSessions)") {
			t.Errorf("the refusal: %d, Retry-After %q, %s", refused.Code, refused.Header().Get("Retry-After"), refused.Body)
		}
		if len(drops) != 1 || drops[0] != DropMaxSessions {
			t.Errorf("SessionDropped got %q, want one %q", drops, DropMaxSessions)
		}
		for _, id := range held {
			if code := ping(h, id); code != http.StatusOK {
				t.Errorf("a ping of a held session: %d", code)
			}
		}

		req := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
		req.Header.Set("Mcp-Session-Id", held[0])
		h.ServeHTTP(httptest.NewRecorder(), req)
		synctest.Wait()
		if _, refused := openSession(t, h); refused != nil {
			t.Errorf("a session after one ended: %d %s", refused.Code, refused.Body)
		}
	})
}

// TestIdleSessionExpires: by default, a session that sends nothing for 10
// minutes is closed, not before.
func TestIdleSessionExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)}, nil)
		h := g.Handler()
		id, refused := openSession(t, h)
		if refused != nil {
			t.Fatalf("open: %d %s", refused.Code, refused.Body)
		}
		open := func() bool {
			for ss := range g.Server().Sessions() {
				if ss.ID() == id {
					return true
				}
			}
			return false
		}
		const idle = 10 * time.Minute
		mcptest.PassTime(idle - time.Second)
		synctest.Wait()
		if !open() {
			t.Fatalf("the session was closed before %v idle", idle)
		}
		mcptest.PassTime(2 * time.Second)
		synctest.Wait()
		if open() {
			t.Errorf("the session is open after %v idle", idle)
		}
		if code := ping(h, id); code != http.StatusNotFound {
			t.Errorf("a ping of the expired session: %d, want 404", code)
		}
	})
}

// TestCloseWhileSessionOpens: Close waits for no client that has not sent
// all of its request for a session, and then no session opens: the request
// gets 503, saying the gateway is closing.
func TestCloseWhileSessionOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, g := setup(t, upstreams{"s": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("s", false)}, nil)
		h := g.Handler()
		body, rest := io.Pipe()
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		answered := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			answered <- w
		}()
		init := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, legacy)
		go fmt.Fprint(rest, init[:20])
		synctest.Wait() // the request waits for the rest of its body

		closed := make(chan error, 1)
		go func() { closed <- g.Close() }()
		synctest.Wait()
		select {
		case <-closed:
		default:
			t.Fatal("Close waits for a request for a session whose body has not all come")
		}
		fmt.Fprint(rest, init[20:])
		rest.Close()
		w := <-answered
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "the gateway is closing") {
			t.Errorf("a session asked for after Close: %d %s, want 503 saying the gateway is closing", w.Code, w.Body)
		}
	})
}
