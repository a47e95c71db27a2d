package switchboard

import (
	"sync"
	"sync/atomic"
)

// skippedLines counts, per server name, the lines its processes wrote to
// stdout that were not JSON-RPC messages (see ServerStatus.SkippedLines).
// A server's processes, shared or per session, share its count, which
// lives as long as the manager: a server removed and added again counts
// on.
type skippedLines struct {
	mu       sync.Mutex
	byServer map[string]*atomic.Uint64
}

// of returns the count of server, made on first use.
func (s *skippedLines) of(server string) *atomic.Uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.byServer[server]
	if n == nil {
		if s.byServer == nil {
			s.byServer = make(map[string]*atomic.Uint64)
		}
		n = new(atomic.Uint64)
		s.byServer[server] = n
	}
	return n
}

// skipHook returns the OnSkippedLine of server's upstreams: it counts the
// line.
func (m *Manager) skipHook(server string) func() {
	n := m.skipped.of(server)
	return func() { n.Add(1) }
}
