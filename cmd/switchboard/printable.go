package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable returns s, text that a server, a config or a gateway wrote,
// safe to print on a terminal: each control character but newline and
// tab (ESC, which starts the sequences that retitle, clear or rewrite a
// terminal; the other C0 and C1 controls; DEL), each bidirectional
// control (U+202E, which shows text reversed) and line separator, and
// each byte that is not UTF-8 is shown escaped, as \x1b or \u202e.
func printable(s string) string { return escapeControls(s, "\n\t") }

// printableLine is printable for a line or a table cell: newline, tab and
// carriage return are escaped too, so that the text cannot start a line
// or a column of its own.
func printableLine(s string) string { return escapeControls(s, "") }

// escapeControls escapes what printable says, but for the runes in keep.
func escapeControls(s, keep string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || isControl(r) && !strings.ContainsRune(keep, r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for s = s[i:]; s != ""; {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case !isControl(r) || strings.ContainsRune(keep, r):
			b.WriteString(s[:size])
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		s = s[size:]
	}
	return b.String()
}

// isControl reports whether r changes how a terminal shows what follows
// it, rather than showing itself.
func isControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}
