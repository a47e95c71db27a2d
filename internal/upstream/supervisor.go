package upstream

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A supervisor runs one server's connection: it takes the commands of the
// upstream's callers (start, reconnect, disconnect, a new config, close),
// and its owner goroutine, the only one that connects, closes sessions and
// moves the state on its own, carries them out, attempts on the schedule,
// and serves each session (see owner). It keeps the state, the current
// session and the attempt that requests wait for, and publishes every
// change as an Event.
//
// Its lock, mu, guards that state and the pending commands, for the change
// only: no attempt, close or request runs under it. OnEvent is called
// under it, and the list set's lock may be taken under it (for a
// snapshot), never the other way round.
type supervisor struct {
	// Set by newSupervisor, read-only after.
	red      *redactor
	onEvent  func(Event)    // Options.OnEvent
	rand     func() float64 // the jitter's source
	settings *settingsRef
	dial     *dialer
	lists    *listSet

	// The lifetime of the owner goroutine: detached from every caller,
	// ended by close.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the owner goroutine has returned

	// Signals to the owner goroutine; buffered, sends never block.
	wake   chan struct{} // a command is pending: see takeCommands
	early  chan struct{} // a request waits: an early attempt, if this step has had none
	demand chan struct{} // a request found no session: check whether the server is back

	mu sync.Mutex
	// What is wanted: commands the owner has not taken yet.
	want         bool   // the server should be connected: Start, Connect or Restart was called, and no Disconnect since
	restart      bool   // a fresh connection is wanted now: a manual reconnect, or a new config
	resetBreaker bool   // a manual reconnect or a new config forgives past crashes
	stopping     *op    // a Disconnect waits for the session to be closed
	interrupt    func() // ends the owner's I/O in progress (an attempt, a list load); nil if none
	started      bool   // the owner goroutine runs
	// What is.
	state      State
	since      time.Time
	lastErr    error         // the last failure, redacted; kept across states, hidden while connected
	changed    chan struct{} // closed and replaced on every change
	sess       *session      // the current session; requests use it only while connected
	next       *op           // the attempt that will answer a request made now
	attempting bool          // next is in progress
	earlyUsed  bool          // this step between scheduled attempts has had its early attempt
	wantedAt   time.Time     // when a request last found no session
	waiting    int           // requests waiting for a connection
	failedOnce bool          // an attempt has failed, once
	init       *mcp.InitializeResult
	// seedInfo and seedInstructions came with the seeded tools: what the
	// snapshot reports while it shows them and init is nil.
	seedInfo         *mcp.Implementation
	seedInstructions string
	reconnects       uint64
	closeErr         error
}

func newSupervisor(red *redactor, onEvent func(Event), rand func() float64, settings *settingsRef, dial *dialer, lists *listSet) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{
		red: red, onEvent: onEvent, rand: rand, settings: settings, dial: dial, lists: lists,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		early:   make(chan struct{}, 1),
		demand:  make(chan struct{}, 1),
		changed: make(chan struct{}),
		next:    newOp(),
		since:   time.Now(),
	}
	if !settings.Load().cfg.IsEnabled() {
		s.state = Disabled
	}
	return s
}

// snapshot returns the upstream's current state.
func (sv *supervisor) snapshot() Snapshot {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.snapshotLocked()
}

func (sv *supervisor) snapshotLocked() Snapshot {
	ls := sv.lists.view()
	snap := Snapshot{
		Name: sv.red.name, Config: sv.settings.Load().cfg, State: sv.state, Since: sv.since, Err: sv.lastErr,
		Tools: ls.tools, Cached: ls.cached, Prompts: ls.prompts,
		Resources: ls.resources, Templates: ls.templates, Reconnects: sv.reconnects,
	}
	if sv.state == Connected {
		snap.Err = nil
		if sv.sess != nil && sv.sess.proc != nil {
			snap.PID = sv.sess.proc.cmd.Process.Pid
		}
	}
	if sv.init == nil && ls.cached {
		snap.Instructions = sv.seedInstructions
		if sv.seedInfo != nil {
			info := *sv.seedInfo
			snap.ServerInfo = &info
		}
	}
	if sv.init != nil {
		snap.Instructions = sv.init.Instructions
		snap.ProtocolVersion = sv.init.ProtocolVersion
		snap.Capabilities = sv.init.Capabilities
		if sv.init.ServerInfo != nil {
			info := *sv.init.ServerInfo
			snap.ServerInfo = &info
		}
	}
	return snap
}

// stateNow returns the current state.
func (sv *supervisor) stateNow() State {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.state
}

// setStateLocked records a transition and publishes it. A repeat of the
// current state is no transition, but a new cause is kept. It never leaves
// Closed.
func (sv *supervisor) setStateLocked(to State, err error) {
	if sv.state == Closed {
		return
	}
	if sv.state == to {
		if err != nil {
			sv.lastErr = err
			sv.bumpLocked()
		}
		return
	}
	from := sv.state
	sv.state, sv.since, sv.lastErr = to, time.Now(), err
	sv.bumpLocked()
	sv.publishLocked(Event{Kind: EventState, From: from})
}

// bumpLocked wakes whoever waits for a change.
func (sv *supervisor) bumpLocked() {
	close(sv.changed)
	sv.changed = make(chan struct{})
}

// publishLocked hands ev, with the state as of now, to OnEvent.
func (sv *supervisor) publishLocked(ev Event) {
	if sv.onEvent == nil {
		return
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	ev.Snapshot = sv.snapshotLocked()
	sv.onEvent(ev)
}

// publish publishes ev, a change that is not the supervisor's (a list, a
// resource), and wakes whoever waits for a change.
func (sv *supervisor) publish(ev Event) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.bumpLocked()
	sv.publishLocked(ev)
}

// commit runs apply, a change of the list set, and publishes ev, if s is
// the current session; it reports whether it did. Both run under the
// supervisor's lock, so that the session cannot change in between and no
// snapshot shows the change before its event.
func (sv *supervisor) commit(s *session, apply func(), ev Event) bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.sess != s {
		return false
	}
	apply()
	sv.bumpLocked()
	sv.publishLocked(ev)
	return true
}

// seed offers tools from a persistent cache to the list set (see
// listSet.seed), and publishes them, unless the upstream is closed.
func (sv *supervisor) seed(tools []*mcp.Tool, info *mcp.Implementation, instructions string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.state != Closed && sv.lists.seed(tools) {
		sv.seedInfo, sv.seedInstructions = nil, instructions
		if info != nil {
			c := *info
			sv.seedInfo = &c
		}
		sv.bumpLocked()
		sv.publishLocked(Event{Kind: EventList, List: Tools})
	}
}

// connectedSession returns the current session while connected, else nil.
func (sv *supervisor) connectedSession() *session {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.state != Connected {
		return nil
	}
	return sv.sess
}

// detach forgets s, so that no new request uses it.
func (sv *supervisor) detach(s *session) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.sess == s {
		sv.sess = nil
	}
}

// finishNextLocked ends the waits for the next attempt with err, and makes
// a new one.
func (sv *supervisor) finishNextLocked(err error) {
	a := sv.next
	sv.next = newOp()
	a.finish(err)
}

// earlyUsedNow reports whether this step has had its early attempt.
func (sv *supervisor) earlyUsedNow() bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.earlyUsed
}

// newStepLocked starts a step between scheduled attempts: it may have an
// early attempt, and a request for one made before it no longer counts.
// It is called before the waiters of the failed attempt wake, so that a
// request they make at once belongs to the new step.
func (sv *supervisor) newStepLocked() {
	select {
	case <-sv.early:
	default:
	}
	sv.earlyUsed = false
}

// ioContext returns a context for the owner's I/O (an attempt, a list
// load) that close and every command that needs the owner's attention end
// at once, and its release. A command already pending ends it at once.
func (sv *supervisor) ioContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(sv.ctx)
	sv.mu.Lock()
	sv.interrupt = cancel
	if sv.restart || sv.stopping != nil || !sv.want {
		cancel()
	}
	sv.mu.Unlock()
	return ctx, func() {
		sv.mu.Lock()
		sv.interrupt = nil
		sv.mu.Unlock()
		cancel()
	}
}
