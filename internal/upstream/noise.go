package upstream

import (
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

// skipLine counts and logs line, which the server wrote to stdout and which
// is not JSON-RPC (see stdoutFilter).
func (u *Upstream) skipLine(line []byte) {
	if u.opts.OnSkippedLine != nil {
		u.opts.OnSkippedLine()
	}
	u.noise.skipped(line, u.showLine)
}

// showLine returns the start of line as a log may show it: redacted, cut
// short, and escaped.
func (u *Upstream) showLine(line []byte) string {
	s := u.redact(string(line))
	if len(s) > shownNoise {
		cut := shownNoise
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return escape(s)
}

// escape returns s with what is not printable (control characters, invalid
// UTF-8) escaped as %q escapes it, so that nothing a server prints reaches
// a terminal raw, whatever the log's handler. The rest is left as it is, to
// be quoted once, by the handler.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !strconv.IsPrint(r) {
			q := strconv.Quote(s[i : i+size])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
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

// skipped records a skipped line, which show turns into what a log shows.
func (n *noiseLog) skipped(line []byte, show func([]byte) string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.lines++
	if n.lines == 1 {
		n.first = show(line)
	}
	now := time.Now()
	switch {
	case !now.Before(n.next):
		n.flushLocked(now)
	case n.timer == nil:
		n.timer = time.AfterFunc(n.next.Sub(now), n.flush)
	}
}

func (n *noiseLog) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.timer = nil
	if n.lines > 0 && !n.stopped {
		n.flushLocked(time.Now())
	}
}

func (n *noiseLog) flushLocked(now time.Time) {
	n.log(n.lines, n.first)
	n.lines, n.first = 0, ""
	n.next = now.Add(noiseLogEvery)
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
