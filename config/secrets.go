package config

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// minSecretLen is the shortest value that is tracked: redacting "1" or "on"
// everywhere would mangle messages and protect nothing.
const minSecretLen = 4

const redacted = "[redacted]"

// Secrets is the set of values substituted from the environment, to be
// redacted from anything shown. It is safe for concurrent use. The zero value
// and nil hold no secrets.
type Secrets struct {
	mu       sync.Mutex
	values   map[string]struct{}
	replacer *strings.Replacer // built on first use; nil when values change
}

// Add tracks values. Values shorter than 4 bytes are not tracked.
// Add must not be called on a nil Secrets.
func (r *Secrets) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if len(v) < minSecretLen {
			continue
		}
		if _, ok := r.values[v]; ok {
			continue
		}
		if r.values == nil {
			r.values = map[string]struct{}{}
		}
		r.values[v] = struct{}{}
		r.replacer = nil
	}
}

// Merge adds the values of other to r. Merge must not be called on a nil
// Secrets; other may be nil.
func (r *Secrets) Merge(other *Secrets) {
	if other == nil || other == r {
		return
	}
	other.mu.Lock()
	values := make([]string, 0, len(other.values))
	for v := range other.values {
		values = append(values, v)
	}
	other.mu.Unlock()
	r.Add(values...)
}

// Values returns how many values are tracked.
func (r *Secrets) Values() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.values)
}

// Redact replaces every occurrence of every tracked value in s with
// "[redacted]". Where two values overlap, the longer one wins.
func (r *Secrets) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.Lock()
	rep := r.replacer
	if rep == nil && len(r.values) > 0 {
		// A Replacer tries its pairs in argument order at each position,
		// so longest first makes the longest match win.
		values := make([]string, 0, len(r.values))
		for v := range r.values {
			values = append(values, v)
		}
		slices.SortFunc(values, func(a, b string) int {
			return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
		})
		pairs := make([]string, 0, 2*len(values))
		for _, v := range values {
			pairs = append(pairs, v, redacted)
		}
		rep = strings.NewReplacer(pairs...)
		r.replacer = rep
	}
	r.mu.Unlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// RedactError returns an error whose message is err's, redacted, and which
// unwraps to err, so that [errors.Is] and [errors.As] keep working. It
// returns err itself when there is nothing to redact, and nil for nil.
func (r *Secrets) RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := r.Redact(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
