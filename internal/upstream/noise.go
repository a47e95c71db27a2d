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
	return &noiseLog{log: func(lines int, first string) {
		level := slog.LevelWarn
		if quiet != nil && quiet() {
			level = slog.LevelInfo
		}
		logger.Log(context.Background(), level, "skipped lines on stdout that are not JSON-RPC", "lines", lines, "first", first)
	}}
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
// at the end of the period, as a count and the first of them. Its methods
// are safe for concurrent use.
type noiseLog struct {
	log func(lines int, first string)

	mu      sync.Mutex
	next    time.Time   // when the next log line may be written
	lines   int         // skipped since the last log line
	first   string      // the first of them, as shown
	timer   *time.Timer // writes the log line at next; nil if none is due
	stopped bool
}

// noted records a skipped line, which show turns into what a log shows.
// The log line, if one is due, is written after the lock is released.
func (n *noiseLog) noted(line []byte, show func([]byte) string) {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	n.lines++
	if n.lines == 1 {
		n.first = show(line)
	}
	var lines int
	var first string
	now := time.Now()
	switch {
	case !now.Before(n.next):
		lines, first = n.takeLocked(now)
	case n.timer == nil:
		n.timer = time.AfterFunc(n.next.Sub(now), n.flush)
	}
	n.mu.Unlock()
	if lines > 0 {
		n.log(lines, first)
	}
}

func (n *noiseLog) flush() {
	n.mu.Lock()
	n.timer = nil
	var lines int
	var first string
	if n.lines > 0 && !n.stopped {
		lines, first = n.takeLocked(time.Now())
	}
	n.mu.Unlock()
	if lines > 0 {
		n.log(lines, first)
	}
}

// takeLocked returns what the log line due now tells, and starts the next
// period.
func (n *noiseLog) takeLocked(now time.Time) (lines int, first string) {
	lines, first = n.lines, n.first
	n.lines, n.first = 0, ""
	n.next = now.Add(noiseLogEvery)
	return lines, first
}

// stop cancels the log line due, if any, and any after: the upstream is
// closing. The lines skipped stay counted (Options.OnSkippedLine).
func (n *noiseLog) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
	if n.timer != nil {
		n.timer.Stop()
		n.timer = nil
	}
}
