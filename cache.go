package switchboard

import (
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/toolcache"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// cacheWriter writes servers' tool lists to the persistent cache from its
// own goroutine: the writes sync to disk, and the events that ask for them
// are applied by a goroutine that must not wait.
type cacheWriter struct {
	cache  *toolcache.Cache
	logger *slog.Logger

	mu      sync.Mutex
	pending map[string]cacheEntry // the latest list of each server to write, by name
	written map[string]cacheEntry // the last list of each server written
	closing bool
	wake    chan struct{} // buffered, 1
	done    chan struct{} // closed when the goroutine returns
}

// cacheEntry is one list to write.
type cacheEntry struct {
	fingerprint string // of the unresolved config that listed it
	tools       []*mcp.Tool
	at          time.Time // when it was fetched
	redact      func(string) string
}

func newCacheWriter(cache *toolcache.Cache, logger *slog.Logger) *cacheWriter {
	w := &cacheWriter{cache: cache, logger: logger, pending: make(map[string]cacheEntry), written: make(map[string]cacheEntry),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// put asks for the tools of snap, just listed by the server, to be written,
// redacted with redact. The same list as last time (the upstream keeps an
// unchanged list's slice) is written again only once a day, to keep its
// entry from expiring. A nil writer (no cache) does nothing.
func (w *cacheWriter) put(snap upstream.Snapshot, redact func(string) string) {
	if w == nil {
		return
	}
	entry := cacheEntry{fingerprint: snap.Config.Fingerprint(), tools: snap.Tools, at: time.Now(), redact: redact}
	w.mu.Lock()
	last, ok := w.written[snap.Name]
	unchanged := ok && same(last.tools, entry.tools) && last.fingerprint == entry.fingerprint && entry.at.Sub(last.at) < cacheRewrite
	if !w.closing && !unchanged {
		w.pending[snap.Name] = entry
	}
	w.mu.Unlock()
	if !unchanged {
		signal(w.wake)
	}
}

// cacheRewrite is how often an unchanged tool list is written again, so
// that a long-running server's entry is never older than a day.
const cacheRewrite = 24 * time.Hour

func (w *cacheWriter) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		pending, closing := w.pending, w.closing
		w.pending = make(map[string]cacheEntry)
		w.mu.Unlock()
		for name, e := range pending {
			if err := w.cache.Put(name, e.fingerprint, e.tools, e.at, e.redact); err != nil {
				w.logger.Warn("caching the tool list failed", "server", name, "error", err)
				continue
			}
			w.mu.Lock()
			w.written[name] = e
			w.mu.Unlock()
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
	signal(w.wake)
	<-w.done
}

// signal sends on a buffered channel of size 1 without blocking: a signal
// already pending covers this one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
