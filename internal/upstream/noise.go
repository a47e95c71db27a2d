package upstream

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// noiseLogEvery is the least time between two log lines about a server's
// skipped stdout lines.
const noiseLogEvery = 10 * time.Second

// shownNoise bounds how much of a skipped line a log line shows.
const shownNoise = 200

// newNoiseLog returns a log of skipped lines that writes to logger, at
// Warn, or at Info when quiet (if set) says they were reported before.
func newNoiseLog(logger *slog.Logger, quiet func() bool) *noiseLog {
	return newNoiseLogFunc(func(lines int, first string) {
		level := slog.LevelWarn
		if quiet != nil && quiet() {
			level = slog.LevelInfo
		}
		logger.Log(context.Background(), level, "skipped lines on stdout that are not JSON-RPC", "lines", lines, "first", first)
	})
}

// newNoiseLogFunc returns a log of skipped lines that writes with log:
// one line at once, then at most one line per noiseLogEvery, which tells
// how many lines were skipped since, and the first of them.
func newNoiseLogFunc(log func(lines int, first string)) *noiseLog {
	return &noiseLog{log: log, rate: newRateLog(noiseLogEvery, 1, log)}
}

// showLine returns the start of line as a log may show it: redacted (by
// redact), cut
// short, and with what is not printable (control characters, a bidi
// override, invalid UTF-8) replaced with U+FFFD, so that nothing a server
// prints reaches a terminal or a log viewer raw, whatever the log's
// handler, and no handler escapes it twice.
func showLine(redact func(string) string, line []byte) string {
	s := redact(string(line))
	if len(s) > shownNoise {
		cut := shownNoise
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

// A noiseLog logs the lines a server writes to stdout that are not
// JSON-RPC, at most once per noiseLogEvery: the first at once, the others
// at the end of the period, as a count and the first of them (a rateLog
// that lets one line a period through). Its methods are safe for
// concurrent use.
type noiseLog struct {
	log  func(lines int, first string)
	rate *rateLog
}

// noted records a skipped line, which show turns into what a log shows.
func (n *noiseLog) noted(line []byte, show func([]byte) string) {
	if n.rate.allow(func() string { return show(line) }) {
		n.log(1, show(line))
	}
}

// stop cancels the log line due, if any, and any after: the upstream is
// closing. The lines skipped stay counted (Options.OnSkippedLine).
func (n *noiseLog) stop() { n.rate.stop() }

// A rateLog limits the log lines of one kind for one server: at most burst
// a period, a summary line included. A line over the limit is held back,
// not written: it is counted, and at the end of the period one summary
// line (see summary) tells how many were held back and shows the first of
// them. A period starts with the first line after the last one ended. Its
// methods are safe for concurrent use; summary is called with no lock
// held.
type rateLog struct {
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

func newRateLog(every time.Duration, burst int, summary func(held int, first string)) *rateLog {
	return &rateLog{every: every, burst: burst, summary: summary}
}

// allow reports whether a line may be written now. If not, it is counted,
// and show, called for the first line held back in a period only, gives
// what the summary shows of it.
func (r *rateLog) allow(show func() string) bool {
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
func (r *rateLog) flush() {
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
func (r *rateLog) endPeriodLocked(now time.Time) (held int, first string) {
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

// stop cancels the summary due, if any, and holds back every line after:
// the upstream is closing.
func (r *rateLog) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
