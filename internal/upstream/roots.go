//lint:file-ignore SA1019 Switchboard forwards roots and logging for as long as servers and clients use them.

package upstream

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A rootSet is the roots an upstream's client offers the server. Its lock
// guards the roots offered (roots), those wanted (want, set by each set,
// which bumps gen), and whether a set is telling the client of a change
// (applying). It is never held while the client notifies the server.
type rootSet struct {
	client *mcp.Client

	mu          sync.Mutex
	gen         uint64
	applying    bool
	roots, want []*mcp.Root
}

// set replaces the roots offered to the server, which is told that they
// changed. The server is told without a lock held: a set that finds
// another telling the server of an earlier change leaves its roots to that
// one, which applies the latest roots before it returns, and returns at
// once.
func (r *rootSet) set(roots []*mcp.Root) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.want = roots
	r.gen++
	if r.applying {
		return
	}
	r.applying = true
	for applied := uint64(0); applied != r.gen; {
		applied = r.gen
		gone := urisNotIn(r.roots, r.want)
		r.roots = r.want
		want := r.roots
		r.mu.Unlock()
		r.client.RemoveRoots(gone...)
		r.client.AddRoots(want...)
		r.mu.Lock()
	}
	r.applying = false
}

// urisNotIn returns the URIs of the roots in from that are not in to.
func urisNotIn(from, to []*mcp.Root) []string {
	keep := make(map[string]bool, len(to))
	for _, r := range to {
		keep[r.URI] = true
	}
	var gone []string
	for _, r := range from {
		if !keep[r.URI] {
			gone = append(gone, r.URI)
		}
	}
	return gone
}
