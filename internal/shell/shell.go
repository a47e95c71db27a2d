// Package shell writes command lines that a person can paste into a POSIX
// shell as they are: the commands that error messages tell users to run.
package shell

import (
	"path/filepath"
	"strings"
)

// Quote quotes s for a POSIX shell, where it needs it: a word of letters,
// digits and /._-+:@%,= is left as it is.
func Quote(s string) string {
	safe := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,=", r)
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !safe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Command returns the switchboard command line of verb with args, each
// quoted, then --config FILE for each of configFiles, made absolute, so
// that it can be pasted in any directory. A source in angle brackets
// ("<embedded>") is found without a flag, and "" is no file.
func Command(verb string, configFiles []string, args ...string) string {
	var b strings.Builder
	b.WriteString("switchboard " + verb)
	for _, a := range args {
		b.WriteString(" " + Quote(a))
	}
	for _, f := range configFiles {
		if f == "" || strings.HasPrefix(f, "<") {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			f = abs
		}
		b.WriteString(" --config " + Quote(f))
	}
	return b.String()
}
