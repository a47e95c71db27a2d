package upstream

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
)

// The commands of an Upstream, which its supervisor carries out.

// Start asks for the server to be connected, and returns at once, with a
// channel closed when the connection attempt in progress or due ends; it
// is closed already when there is none (the server is connected, or waits
// for a later attempt, or is disabled or closed). It launches the owner
// goroutine on first use; that goroutine makes its first attempt only once
// begin is closed (nil: at once), though the server is connecting from the
// call. A running upstream is left alone, and begin ignored. The begin
// gate is for a caller that starts many servers at once and must first
// publish what they expose: once their processes start, they could starve
// that work of the CPU.
//
// Start does not say how the attempt ended: [Upstream.Connect] does.
func (u *Upstream) Start(begin <-chan struct{}) <-chan struct{} { return u.sup.start(begin) }

// Connect is Start(nil) that waits until the connection attempt in
// progress or due settles, or ctx is done, and returns the attempt's
// error. A connected server returns nil at once; one that failed and waits
// for a later attempt returns its last error at once. The attempt itself
// is not bound to ctx: it goes on in the background.
func (u *Upstream) Connect(ctx context.Context) error { return u.sup.connect(ctx) }

// Settle waits while the upstream is connecting, for the attempt in
// progress or due, and, once its first session is up, for that session's
// first lists, at most for d (0: no limit) and for ctx. It starts nothing,
// and returns at once when there is nothing to wait for.
func (u *Upstream) Settle(ctx context.Context, d time.Duration) {
	if !u.Settling() {
		return
	}
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if a := u.sup.connecting(); a != nil {
		select {
		case <-a.done:
		case <-ctx.Done():
			return
		}
	}
	if u.State() == Connected {
		select {
		case <-u.lists.loaded:
		case <-ctx.Done():
		}
	}
}

// Settling reports whether Settle would wait: the upstream is connecting,
// or its first session has not loaded its lists yet.
func (u *Upstream) Settling() bool {
	state := u.State()
	if state == Connecting {
		return true
	}
	select {
	case <-u.lists.loaded:
		return false
	default:
		return state == Connected
	}
}

// Unproven reports whether the upstream is making its first connection
// (see Settling) with nothing to show for it yet: no tools seeded from the
// cache, no failed attempt, and no session that loaded its lists, ever.
// Only such a server is worth a wait before a client's first lists; since
// is when its current state began, which the wait counts from.
func (u *Upstream) Unproven() (since time.Time, ok bool) {
	if !u.lists.unproven() {
		return time.Time{}, false
	}
	return u.sup.unproven()
}

// Restart asks for a fresh connection now: it drops the current session,
// if any, forgives past crashes (the breaker, and crash-loop), and starts
// the upstream if it is not running. Concurrent calls share one attempt,
// as does a call made while the upstream is connecting (started, and not
// yet connected or failed). A scheduled attempt in progress, whose failure
// would keep the old schedule, is superseded by a fresh one. Restart
// returns at once, with a channel closed when the attempt ends (closed
// already if the upstream is disabled or closed). Restart does not say how
// the attempt ended: once the channel is closed, the state and
// [Snapshot.Err] do, until the next change.
func (u *Upstream) Restart() <-chan struct{} { return u.sup.reconnect() }

// Disconnect stops the server: it stops every attempt, closes the session
// (ending a stdio server's process group) and leaves the upstream
// Disconnected until Start, Connect or Restart. A server that was down
// keeps its last error. Disconnect waits for the session to be closed, or
// for ctx, and returns the close's error. It is idempotent.
func (u *Upstream) Disconnect(ctx context.Context) error { return u.sup.disconnect(ctx) }

// Reconfigure applies a changed config. A config that differs only in what
// the manager decides (prefix, tool filters, required) is taken as is. Any
// other change makes a clean reconnect with the new config, which keeps the
// resource subscriptions and forgives past crashes. A config that disables
// the server stops it (Disabled); one that enables a disabled server leaves
// it Disconnected, to be started. The name never changes.
func (u *Upstream) Reconfigure(srv config.Server) {
	srv.Name = u.name
	u.sup.reconfigure(srv)
}

// Seed offers what the server had last time (from a persistent cache): its
// tools, to be listed until the server lists its own, and the serverInfo
// (info, nil if none) and instructions it reported with them, which
// [Snapshot] reports while it shows those tools, until the server connects
// and reports its own. It does nothing if tools is empty, once the server
// has listed its tools, or after Close.
func (u *Upstream) Seed(tools []*mcp.Tool, info *mcp.Implementation, instructions string) {
	u.sup.seed(tools, info, instructions)
}

// Close stops the server for good: it closes the session, ends a stdio
// server's process group and stops the owner goroutine, and returns when
// every session it opened is closed. With a deadline, shortly before it,
// every stop in progress skips to SIGKILL and every connection's I/O (a
// DELETE that hangs, say) ends, so that Close returns by the deadline; a
// zero deadline lets each step of each stop take its full StopGrace. Close
// is idempotent and safe for concurrent use; only the first call's
// deadline counts, and every call waits for the teardown and returns its
// result.
func (u *Upstream) Close(deadline time.Time) error {
	u.closeOnce.Do(func() { u.sup.close(deadline) })
	return u.sup.closeResult()
}
