package switchboard

import (
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// cacheWriter writes servers' tool lists to the persistent cache from its
// own goroutine: the writes sync to disk, and the events that ask for them
// come from goroutines that must not wait.
type cacheWriter struct {
	m *Manager

	mu      sync.Mutex
	pending map[*managed]cacheEntry // the latest list of each server to write
	closing bool
	wake    chan struct{} // buffered, 1
	done    chan struct{} // closed when the goroutine returns
}

// cacheEntry is one list to write.
type cacheEntry struct {
	tools  []*mcp.Tool
	at     time.Time // when it was fetched
	redact func(string) string
}

func newCacheWriter(m *Manager) *cacheWriter {
	w := &cacheWriter{m: m, pending: make(map[*managed]cacheEntry), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// put asks for up's current tools, just fetched, to be written as s's. A
// nil writer (no cache) does nothing.
func (w *cacheWriter) put(s *managed, up *upstream.Upstream) {
	if w == nil {
		return
	}
	entry := cacheEntry{tools: up.Snapshot().Tools, at: time.Now(), redact: up.Redact}
	w.mu.Lock()
	if !w.closing {
		w.pending[s] = entry
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *cacheWriter) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		pending, closing := w.pending, w.closing
		w.pending = make(map[*managed]cacheEntry)
		w.mu.Unlock()
		for s, e := range pending {
			if err := w.m.cache.Put(s.cfg.Name, s.cfg.Fingerprint(), e.tools, e.at, e.redact); err != nil {
				w.m.opts.Logger.Warn("caching the tool list failed", "server", s.cfg.Name, "error", err)
			}
		}
		if closing && len(pending) == 0 {
			return
		}
		if len(pending) == 0 {
			<-w.wake
		}
	}
}

// close writes what is pending, then stops the goroutine.
func (w *cacheWriter) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}
