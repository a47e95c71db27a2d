package switchboard

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/toolcache"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// serverNotes are what a manager learns of each server, by name, beyond
// its upstream's snapshot: the lines its processes wrote to stdout that
// were not JSON-RPC messages (see ServerStatus.SkippedLines), and what the
// persistent cache told of its last run (see ServerStatus.FailedBefore).
// A server's processes, shared or per session, share its notes, which
// live as long as the manager: a server removed and added again counts
// on.
type serverNotes struct {
	mu       sync.Mutex
	byServer map[string]*notes
}

// notes are the notes of one server.
type notes struct {
	lines atomic.Uint64
	// noiseKnown reports that the tool cache says a warning told of the
	// skipped lines, for the config connected: the log tells of them at
	// Info, not Warn. noiseRecorded reports that the cache was asked to
	// say so.
	noiseKnown, noiseRecorded atomic.Bool
	// failedBefore is the failure that the tool cache kept of the
	// server's last run, until the server lists its tools; nil if none.
	// failureRecorded reports that the cache was asked to keep this run's.
	failedBefore    atomic.Pointer[string]
	failureRecorded atomic.Bool
}

// of returns the notes of server, made on first use.
func (s *serverNotes) of(server string) *notes {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.byServer[server]
	if n == nil {
		if s.byServer == nil {
			s.byServer = make(map[string]*notes)
		}
		n = new(notes)
		s.byServer[server] = n
	}
	return n
}

// skipHook returns the OnSkippedLine of server's upstreams: it counts the
// line, and has the cache record the first that a warning tells of, so
// that the next manager on the same config (a one-shot command's next run)
// warns no more.
func (m *Manager) skipHook(server string) func() {
	n := m.notes.of(server)
	return func() {
		n.lines.Add(1)
		if n.noiseKnown.Load() || !n.noiseRecorded.CompareAndSwap(false, true) {
			return
		}
		if up := m.view.Load().byName[server]; up != nil {
			cfg := up.Config()
			m.writes.reportNoise(server, cfg.Fingerprint())
		}
	}
}

// quietNoise returns the QuietNoise of server's upstreams.
func (m *Manager) quietNoise(server string) func() bool { return m.notes.of(server).noiseKnown.Load }

// failed has the cache keep err, which is redacted, if it is the first
// failure of this run of the server of snap and the server has not listed
// its tools: the next manager on the same config knows that it may fail
// again (see ServerStatus.FailedBefore). The events goroutine calls it.
func (m *Manager) failed(snap upstream.Snapshot, err error) {
	if err == nil || len(snap.Tools) > 0 && !snap.Cached {
		return
	}
	if m.notes.of(snap.Name).failureRecorded.CompareAndSwap(false, true) {
		m.writes.reportFailure(snap.Name, snap.Config.Fingerprint(), scrubAddresses(err.Error()))
	}
}

// listed forgets the failure of a server's last run: it listed its tools.
// The cache forgets it as it writes the list.
func (m *Manager) listed(name string) { m.notes.of(name).failedBefore.Store(nil) }

// readNotes takes what the cache noted of the server called name, with
// the config of fingerprint, in place of what the manager knew of it (of a
// config that a reload changed, say).
func (m *Manager) readNotes(name, fingerprint string) {
	m.takeNotes(name, m.cache.Notes(name, fingerprint), false)
}

// takeNotes takes noted, what the cache noted of the server called name,
// in place of what the manager knew of it. A failure tells nothing of a
// server with tools in the cache (cached), nor after failedBeforeFor.
func (m *Manager) takeNotes(name string, noted toolcache.Notes, cached bool) {
	n := m.notes.of(name)
	n.noiseKnown.Store(noted.StdoutNoise)
	n.noiseRecorded.Store(false)
	n.failureRecorded.Store(false)
	if noted.Failure != "" && !cached && time.Since(noted.FailedAt) < failedBeforeFor {
		n.failedBefore.Store(&noted.Failure)
	} else {
		n.failedBefore.Store(nil)
	}
}
