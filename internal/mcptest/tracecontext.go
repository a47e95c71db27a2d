package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

// TraceContexts records the W3C trace context of the tools/call requests
// that reach an HTTP handler: the traceparent of each POST's header, and of
// its params._meta. It is safe for concurrent use.
type TraceContexts struct {
	mu   sync.Mutex
	seen []TraceContext
}

// A TraceContext is what one tools/call request carried.
type TraceContext struct {
	Tool   string // params.name
	Header string // the traceparent header
	Meta   string // params._meta.traceparent
}

// Wrap returns h, recording what reaches it.
func (t *TraceContexts) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
					Meta struct {
						Traceparent string `json:"traceparent"`
					} `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				t.mu.Lock()
				t.seen = append(t.seen, TraceContext{Tool: msg.Params.Name, Header: r.Header.Get("traceparent"), Meta: msg.Params.Meta.Traceparent})
				t.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Seen returns the trace context of every tools/call received, in order.
func (t *TraceContexts) Seen() []TraceContext {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TraceContext(nil), t.seen...)
}
