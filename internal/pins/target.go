package pins

import (
	"regexp"
	"strings"
)

// pinPrefix is the pin an approval may name: 8 to 64 hex digits.
var pinPrefix = regexp.MustCompile(`^[0-9a-f]{8,64}$`)

// SplitTarget splits a target of an approval, SERVER[/TOOL][@PIN], into its
// parts. SERVER is the longest of servers that the target is, or starts
// with followed by "/", so that server names may hold "/" or "@"; failing
// that, what comes before the first "/". PIN is what follows the last "@",
// when it is 8 to 64 hex digits, so that tool names may hold "@". one
// reports a tool.
func SplitTarget(target string, servers []string) (server, tool, pin string, one bool) {
	if i := strings.LastIndexByte(target, '@'); i >= 0 && pinPrefix.MatchString(target[i+1:]) {
		target, pin = target[:i], target[i+1:]
	}
	best := ""
	for _, s := range servers {
		if len(s) > len(best) && (target == s || strings.HasPrefix(target, s+"/")) {
			best = s
		}
	}
	if best == "" {
		server, tool, one = strings.Cut(target, "/")
		return server, tool, pin, one
	}
	if target == best {
		return best, "", pin, false
	}
	return best, target[len(best)+1:], pin, true
}
