package catalog

import "path"

// Allowed reports whether a tool called name passes a server's static
// filters. Patterns use [path.Match] syntax and match the tool's original
// name. An empty allow list allows every tool; deny is applied after allow.
// A malformed pattern matches nothing.
func Allowed(name string, allow, deny []string) bool {
	if len(allow) > 0 && !matchAny(allow, name) {
		return false
	}
	return !matchAny(deny, name)
}

// matchAny reports whether any of patterns matches name.
func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, name); ok && err == nil {
			return true
		}
	}
	return false
}
