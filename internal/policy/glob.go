package policy

import (
	"errors"
	"strings"
)

// A glob matches a name or URI: `*` matches any run of characters,
// including none and including "/" (so that "file:///docs/*" matches every
// file below docs), and every other character matches itself. There is no
// `?`, no class and no escape, so no glob is malformed: only an empty one
// is refused.
type glob struct {
	parts []string // the literal runs between the stars
	star  bool     // the pattern has a star; parts has len(stars)+1 runs
}

func compileGlob(pattern string) (glob, error) {
	if pattern == "" {
		return glob{}, errors.New("empty glob; want a name, or a pattern with *")
	}
	if !strings.Contains(pattern, "*") {
		return glob{parts: []string{pattern}}, nil
	}
	return glob{parts: strings.Split(pattern, "*"), star: true}, nil
}

// match reports whether s matches g. It runs in time linear in len(s)
// times the number of stars, with no allocation.
func (g glob) match(s string) bool {
	if !g.star {
		return s == g.parts[0]
	}
	first, last := g.parts[0], g.parts[len(g.parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	// Each middle run matches at its leftmost place: that leaves the most
	// room for the runs after it.
	for _, p := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// globs is a list of globs; nil means "absent", which matches anything.
type globs []glob

// compileGlobs compiles patterns; on error, bad is the index of the bad
// one.
func compileGlobs(patterns []string) (_ globs, bad int, _ error) {
	if patterns == nil {
		return nil, 0, nil
	}
	gs := make(globs, 0, len(patterns))
	for i, p := range patterns {
		g, err := compileGlob(p)
		if err != nil {
			return nil, i, err
		}
		gs = append(gs, g)
	}
	return gs, 0, nil
}

// match reports whether s matches any glob of gs.
func (gs globs) match(s string) bool {
	for _, g := range gs {
		if g.match(s) {
			return true
		}
	}
	return false
}
