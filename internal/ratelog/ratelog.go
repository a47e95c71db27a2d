// Package ratelog limits log lines of one kind, so that a peer that makes
// them without end (a server's stdout noise or log messages, a client that
// hits a gateway's limits) floods no log: a few a period go through, and
// one summary line at the end of the period counts those held back and
// shows the first of them.
package ratelog

import (
	"sync"
	"time"
)

// A Log limits log lines of one kind: at most burst a period, a summary
// line included. A line over the limit is held back,
// not written: it is counted, and at the end of the period one summary
// line (see summary) tells how many were held back and shows the first of
// them. A period starts with the first line after the last one ended. Its
// methods are safe for concurrent use; summary is called with no lock
// held.
type Log struct {
	every   time.Duration
	burst   int
	summary func(held int, first string)

	mu      sync.Mutex
	next    time.Time   // when the period ends
	passed  int         // lines let through in the period, the summary included
	held    int         // lines held back in the period
	first   string      // the first of them, as shown
	timer   *time.Timer // writes the summary at next; nil if none is due
	stopped bool
}

// New returns a Log that lets burst lines a period of every through, and
// writes the summary of those it held back with summary.
func New(every time.Duration, burst int, summary func(held int, first string)) *Log {
	return &Log{every: every, burst: burst, summary: summary}
}

// Allow reports whether a line may be written now. If not, it is counted,
// and show, called for the first line held back in a period only, gives
// what the summary shows of it.
func (r *Log) Allow(show func() string) bool {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return false
	}
	now := time.Now()
	var held int
	var first string
	if !now.Before(r.next) {
		held, first = r.endPeriodLocked(now)
	}
	pass := r.passed < r.burst
	if pass {
		r.passed++
	} else {
		r.held++
		if r.held == 1 {
			r.first = show()
		}
		if r.timer == nil {
			r.timer = time.AfterFunc(r.next.Sub(now), r.flush)
		}
	}
	r.mu.Unlock()
	if held > 0 {
		r.summary(held, first)
	}
	return pass
}

// flush writes the summary due at the end of a period.
func (r *Log) flush() {
	r.mu.Lock()
	r.timer = nil
	var held int
	var first string
	if r.held > 0 && !r.stopped {
		held, first = r.endPeriodLocked(time.Now())
	}
	r.mu.Unlock()
	if held > 0 {
		r.summary(held, first)
	}
}

// endPeriodLocked returns what the summary due now, if any (held > 0),
// tells, and starts the next period, in which that summary counts as a
// line.
func (r *Log) endPeriodLocked(now time.Time) (held int, first string) {
	held, first = r.held, r.first
	r.held, r.first = 0, ""
	r.next, r.passed = now.Add(r.every), 0
	if held > 0 {
		r.passed = 1
	}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	return held, first
}

// Stop cancels the summary due, if any, and holds back every line after:
// what logs is going away.
func (r *Log) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
