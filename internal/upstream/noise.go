package upstream

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-mcp/switchboard/internal/ratelog"
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
	return &noiseLog{log: log, rate: ratelog.New(noiseLogEvery, 1, log)}
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
// at the end of the period, as a count and the first of them (a ratelog.Log
// that lets one line a period through). Its methods are safe for
// concurrent use.
type noiseLog struct {
	log  func(lines int, first string)
	rate *ratelog.Log
}

// noted records a skipped line, which show turns into what a log shows.
func (n *noiseLog) noted(line []byte, show func([]byte) string) {
	if n.rate.Allow(func() string { return show(line) }) {
		n.log(1, show(line))
	}
}

// stop cancels the log line due, if any, and any after: the upstream is
// closing. The lines skipped stay counted (Options.OnSkippedLine).
func (n *noiseLog) stop() { n.rate.Stop() }
