package upstream

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/switchboard-mcp/switchboard/config"
)

// What a stdio server writes to stderr is kept for its errors, in bounded
// memory: the last stderrTailLines lines and, of those before them, the
// first stderrCauseLines that look like the statement of a cause (see
// looksLikeCause). A server that fails at start often says why on its
// first line and then prints its usage: the tail alone would keep the
// usage and lose the cause.
const (
	// stderrTailLines is how many of the last lines of a child's stderr
	// are kept.
	stderrTailLines = 20
	// stderrCauseLines is how many lines that look like a cause are kept
	// from before the last ones.
	stderrCauseLines = 3
	// maxTailLine bounds each kept line, so a child cannot grow our memory.
	maxTailLine = 512
)

// An error of a stdio server carries the kept lines of its stderr after
// stderrMark, in the order they were written, joined with stderrSep, with
// stderrGap where lines were left out.
const (
	stderrMark = "; stderr: "
	stderrSep  = " | "
	stderrGap  = "…"
)

// A stderrLine is a kept line of a child's stderr.
type stderrLine struct {
	n     int    // its number, from 0: a gap in the numbers is lines left out
	text  string // cut at maxTailLine; never holds stderrSep, nor is stderrGap
	cause bool   // it looks like the statement of a cause (looksLikeCause)
}

// A tail keeps the lines written to a child's stderr that pickLines would
// pick from all of them, keeping max last ones, redacted of secrets.
type tail struct {
	max     int
	secrets *config.Secrets // may be nil

	mu    sync.Mutex
	lines []stderrLine // guarded by mu
	n     int          // lines written so far; guarded by mu
}

func newTail(max int, secrets *config.Secrets) *tail { return &tail{max: max, secrets: secrets} }

// readFrom keeps the lines read from r, each cut at maxTailLine bytes as
// it is read: a line without end holds no more than that.
func (t *tail) readFrom(r io.Reader) {
	br := bufio.NewReader(r)
	line := make([]byte, 0, maxTailLine+1)
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk[:min(len(chunk), cap(line)-len(line))]...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the line goes on
		}
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			t.add(s)
		}
		line = line[:0]
		if err != nil {
			return
		}
	}
}

// add keeps line, redacted and cut at maxTailLine bytes, if pickLines
// would. It is redacted first, as it was written: a secret that the cut
// or the change of a separator would break up is still found, and none of
// one that the cut splits is kept. What in it would read as the separator
// of two lines, or as a gap, is changed, so that the lines can be told
// apart again (see ShortStderr).
func (t *tail) add(line string) {
	if len(line) > maxTailLine {
		line = t.secrets.RedactTruncated(line[:maxTailLine]) + "…"
	} else {
		line = t.secrets.Redact(line)
	}
	line = strings.ReplaceAll(line, stderrSep, " ¦ ")
	if line == stderrGap {
		line = "..."
	}
	cause := looksLikeCause(line)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = pickLines(append(t.lines, stderrLine{n: t.n, text: line, cause: cause}), t.max)
	t.n++
}

// String returns the kept lines as an error carries them (see stderrMark),
// or "".
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return joinLines(t.lines, t.n)
}

// hasPrefix reports whether a kept line starts with prefix.
func (t *tail) hasPrefix(prefix string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.ContainsFunc(t.lines, func(l stderrLine) bool { return strings.HasPrefix(l.text, prefix) })
}

// pickLines returns the last `last` of lines and, before them, the first
// stderrCauseLines of the others that look like a cause, in their order.
// It reuses the array of lines.
func pickLines(lines []stderrLine, last int) []stderrLine {
	cut := max(len(lines)-max(last, 0), 0)
	kept := lines[:0]
	for _, l := range lines[:cut] {
		if l.cause && len(kept) < stderrCauseLines {
			kept = append(kept, l)
		}
	}
	return append(kept, lines[cut:]...)
}

// joinLines joins lines, of the total written, with stderrSep, with
// stderrGap wherever lines were left out.
func joinLines(lines []stderrLine, total int) string {
	var b strings.Builder
	next := 0
	for _, l := range lines {
		if l.n > next {
			b.WriteString(stderrGap + stderrSep)
		}
		b.WriteString(l.text + stderrSep)
		next = l.n + 1
	}
	if next < total {
		b.WriteString(stderrGap + stderrSep)
	}
	return strings.TrimSuffix(b.String(), stderrSep)
}

// splitLines parses what joinLines wrote: the lines and the total written.
func splitLines(s string) (lines []stderrLine, total int) {
	for text := range strings.SplitSeq(s, stderrSep) {
		if text != stderrGap {
			lines = append(lines, stderrLine{n: total, text: text, cause: looksLikeCause(text)})
		}
		total++
	}
	return lines, total
}

// splitStderr returns msg, a server's error message, cut at stderrMark:
// what comes before it, and the stderr lines after it, if any.
func splitStderr(msg string) (head string, lines []stderrLine, total int, ok bool) {
	head, rest, ok := strings.Cut(msg, stderrMark)
	if !ok {
		return msg, nil, 0, false
	}
	lines, total = splitLines(rest)
	return head, lines, total, true
}

// ShortStderr returns msg, the message of a server's error, with only the
// last n of the stderr lines it carries, and before them the first of the
// others that look like a cause, if it carries more: for a log line, where
// all of them would drown the rest. "…" marks the lines left out.
func ShortStderr(msg string, n int) string {
	head, lines, total, ok := splitStderr(msg)
	if !ok {
		return msg
	}
	kept := pickLines(lines, n)
	if len(kept) == len(lines) {
		return msg
	}
	return head + stderrMark + joinLines(kept, total)
}

// WithoutStderr returns msg, the message of a server's error, without the
// stderr lines it carries, for an MCP client: what a server prints is for
// its operator (status and logs), and may say more than a client should
// learn. The lines run from stderrMark to the end of the line (a line of
// stderr holds no newline), so the message of a join loses no other error.
func WithoutStderr(msg string) string {
	var b strings.Builder
	for {
		head, rest, ok := strings.Cut(msg, stderrMark)
		if !ok {
			if b.Len() == 0 {
				return msg
			}
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(head)
		msg = ""
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			msg = rest[i:]
		}
	}
}

// FitError returns msg, the message of a server's error, if it is at most
// width runes long; otherwise a shorter text, followed by more (such as
// "…"), of width runes at most. The stderr lines go first: the lines that
// look like a cause are kept, then as many of the last lines as fit, with
// "…" where lines were left out; only then is the text cut. A "…" or a
// separator that would end the text gives way to more.
func FitError(msg string, width int, more string) string {
	if utf8.RuneCountInString(msg) <= width {
		return msg
	}
	room := width - utf8.RuneCountInString(more)
	if room <= 0 {
		return cutRunes(msg, max(width, 0))
	}
	head, lines, total, _ := splitStderr(msg)
	// The last line stays when no line looks like a cause: cut, it says
	// more than "…" alone.
	least := 1
	if slices.ContainsFunc(lines, func(l stderrLine) bool { return l.cause }) {
		least = 0
	}
	text := msg
	for last := len(lines) - 1; last >= least; last-- {
		text = head + stderrMark + joinLines(pickLines(append([]stderrLine(nil), lines...), last), total)
		if utf8.RuneCountInString(text) <= room {
			break
		}
	}
	return strings.TrimRight(cutRunes(text, room), " |"+stderrGap) + more
}

// cutRunes returns the first n runes of s.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// looksLikeCause reports whether line, written to a server's stderr, looks
// like the statement of what went wrong: it starts at the left margin and
// holds a word or phrase of causeWords, or a word with an ending of
// causeEndings. What is indented is left out, which takes out a usage
// text's options and their descriptions (whose words, such as "required"
// or "invalid", would match), stack frames and continued lines; the
// messages themselves ("Error: ...", "panic: ...", "Traceback ...",
// "npm ERR! ...", a logger's "2025/01/02 10:00:00 GITHUB_TOKEN not set")
// start at the margin. It reads each word once: every line a server writes
// is judged.
func looksLikeCause(line string) bool {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return false
	}
	words := strings.FieldsFunc(strings.ToLower(line), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '\'')
	})
	for i, w := range words {
		w = strings.Trim(w, "'")
		for _, phrase := range causeWords[w] {
			if len(phrase) < len(words)-i && slices.Equal(phrase, words[i+1:i+1+len(phrase)]) {
				return true
			}
		}
		for _, end := range causeEndings {
			if strings.HasSuffix(w, end) {
				return true
			}
		}
	}
	return false
}

// causeEndings end the words that say that something went wrong, alone or
// at the end of a longer one ("ValueError", "ECONNREFUSED",
// "AccessDenied").
var causeEndings = []string{"error", "exception", "refused", "denied"}

// causeWords are the other words and phrases, in lower case, that say that
// something went wrong: by their first word, the words that follow it
// (none: the word alone). Words that a healthy server's log says too
// ("warning", "retry", "token") are not among them.
var causeWords = phrases(
	"err", "fatal", "panic", "panicked", "traceback", "forbidden", "unauthorized", "unauthorised",
	"invalid", "missing", "cannot", "can't", "can not", "could not", "couldn't", "unable", "failed",
	"failure", "expired", "timed out", "not found", "no such", "not set", "not provided",
	"not specified", "not defined", "not configured", "not allowed", "not permitted", "not supported",
	"is required", "are required", "must be set", "must be provided", "must be specified", "no token",
	"no access token", "no api key", "no credentials", "already in use", "out of memory",
	"segmentation fault", "refusing", "refuse",
)

// phrases indexes list, phrases of words, by their first word.
func phrases(list ...string) map[string][][]string {
	m := make(map[string][][]string)
	for _, p := range list {
		words := strings.Fields(p)
		m[words[0]] = append(m[words[0]], words[1:])
	}
	return m
}
