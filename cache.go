package switchboard

import (
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/fifo"
	"github.com/switchboard-mcp/switchboard/internal/toolcache"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// cacheWriter writes servers' tool lists to the persistent cache from its
// queue's goroutine: the writes sync to disk, and the events that ask for
// them are applied by a goroutine that must not wait.
type cacheWriter struct {
	cache  *toolcache.Cache
	logger *slog.Logger
	queue  *fifo.Queue[cacheEntry]

	mu      sync.Mutex
	written map[string]cacheEntry // the last list of each server written
}

// cacheEntry is one list to write.
type cacheEntry struct {
	server      string
	fingerprint string // of the unresolved config that listed it
	tools       []*mcp.Tool
	about       toolcache.About // what the server said of itself, reported with them
	at          time.Time       // when it was fetched
	redact      func(string) string
	// note, if set, is what to write instead of a list: a note of the
	// server in its entry (toolcache.Cache.ReportNoise, ReportFailure).
	note func(*toolcache.Cache) error
}

func newCacheWriter(cache *toolcache.Cache, logger *slog.Logger) *cacheWriter {
	w := &cacheWriter{cache: cache, logger: logger, written: make(map[string]cacheEntry)}
	w.queue = fifo.New(w.write)
	return w
}

// put asks for the tools of snap, just listed by the server, to be written
// with its serverInfo and instructions, redacted with redact. The same list
// and words as last time (the upstream keeps an unchanged list's slice) are
// written again only once a day, to keep their entry from expiring. A nil
// writer (no cache) does nothing.
func (w *cacheWriter) put(snap upstream.Snapshot, redact func(string) string) {
	if w == nil {
		return
	}
	entry := cacheEntry{
		server: snap.Name, fingerprint: snap.Config.Fingerprint(), tools: snap.Tools,
		about: toolcache.About{ServerInfo: snap.ServerInfo, Instructions: snap.Instructions},
		at:    time.Now(), redact: redact,
	}
	w.mu.Lock()
	last, ok := w.written[snap.Name]
	w.mu.Unlock()
	if ok && same(last.tools, entry.tools) && last.fingerprint == entry.fingerprint && sameAbout(last.about, entry.about) && entry.at.Sub(last.at) < cacheRewrite {
		return
	}
	w.queue.Push(entry)
}

// cacheRewrite is how often an unchanged tool list is written again, so
// that a long-running server's entry is never older than a day.
const cacheRewrite = 24 * time.Hour

// reportNoise asks for the entry of server, for fingerprint, to say that a
// warning told of its stdout noise. A nil writer does nothing.
func (w *cacheWriter) reportNoise(server, fingerprint string) {
	w.note(server, func(c *toolcache.Cache) error { return c.ReportNoise(server, fingerprint) })
}

// reportFailure asks for the entry of server, for fingerprint, to keep
// that the server failed to connect with the error text msg, redacted. A
// nil writer does nothing.
func (w *cacheWriter) reportFailure(server, fingerprint, msg string) {
	at := time.Now()
	w.note(server, func(c *toolcache.Cache) error { return c.ReportFailure(server, fingerprint, msg, at) })
}

// note queues the write of a note of server. A nil writer does nothing.
func (w *cacheWriter) note(server string, write func(*toolcache.Cache) error) {
	if w != nil {
		w.queue.Push(cacheEntry{server: server, note: write})
	}
}

// write writes the latest list of each server in batch, and the notes, in
// order.
func (w *cacheWriter) write(batch []cacheEntry) {
	latest := make(map[string]int, len(batch))
	for i, e := range batch {
		if e.note == nil {
			latest[e.server] = i
		}
	}
	for i, e := range batch {
		if e.note != nil {
			if err := e.note(w.cache); err != nil {
				w.logger.Warn("caching what a server did failed", "server", e.server, "error", err)
			}
			continue
		}
		if latest[e.server] != i {
			continue // a later list of the same server replaces it
		}
		if err := w.cache.Store(e.server, e.fingerprint, e.tools, e.about, e.at, e.redact); err != nil {
			w.logger.Warn("caching the tool list failed", "server", e.server, "error", err)
			continue
		}
		w.mu.Lock()
		w.written[e.server] = e
		w.mu.Unlock()
	}
}

// sameAbout reports whether a and b say the same of a server, icons aside.
func sameAbout(a, b toolcache.About) bool {
	return a.Instructions == b.Instructions && sameInfo(a.ServerInfo, b.ServerInfo, true)
}

// sameInfo reports whether a and b, two serverInfos (nil: none), have the
// same name, title and description (what tool search reads of them), and,
// if all is set, the same version and website too.
func sameInfo(a, b *mcp.Implementation, all bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		(!all || a.Version == b.Version && a.WebsiteURL == b.WebsiteURL)
}

// close writes what is queued, then stops the goroutine.
func (w *cacheWriter) close() { w.queue.Close() }
