// Package shell writes command lines that a person can paste into a POSIX
// shell as they are: the commands that error messages tell users to run.
package shell

import "strings"

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
// quoted, and --config FILE when the config came from a file that it is not
// found without the flag ("" or a source in angle brackets, such as
// "<embedded>", needs none).
func Command(verb string, configFile string, args ...string) string {
	var b strings.Builder
	b.WriteString("switchboard " + verb)
	for _, a := range args {
		b.WriteString(" " + Quote(a))
	}
	if configFile != "" && !strings.HasPrefix(configFile, "<") {
		b.WriteString(" --config " + Quote(configFile))
	}
	return b.String()
}
