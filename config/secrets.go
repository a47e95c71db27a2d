package config

import (
	"cmp"
	"encoding/base64"
	"maps"
	"net/url"
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
	forms    []string          // what replacer replaces, longest first; built with it
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
// "[redacted]", and of its common encodings: base64 (standard and URL,
// padded or not) and URL escaping (as a query value or a path segment).
// Where two values overlap, the longer one wins.
func (r *Secrets) Redact(s string) string {
	rep, _ := r.compiled()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// RedactTruncated is [Secrets.Redact] for s, the start of a longer text
// that was cut off: it also leaves out the end of s that begins a tracked
// value, or a form of one, since the rest of that value, which would have
// had it redacted, is gone.
func (r *Secrets) RedactTruncated(s string) string {
	_, forms := r.compiled()
	s = r.Redact(s)
	for _, f := range forms {
		for i := max(len(s)-len(f)+1, 0); i < len(s); i++ {
			if strings.HasPrefix(f, s[i:]) {
				s = s[:i]
				break
			}
		}
	}
	return s
}

// compiled returns the replacer of Redact and every form of every value
// that it replaces, longest first, built on first use; nil for none.
func (r *Secrets) compiled() (*strings.Replacer, []string) {
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.replacer == nil && len(r.values) > 0 {
		set := make(map[string]bool, len(r.values))
		for v := range r.values {
			for _, f := range encodings(v) {
				set[f] = true
			}
		}
		// A Replacer tries its pairs in argument order at each position,
		// so longest first makes the longest match win.
		forms := slices.Collect(maps.Keys(set))
		slices.SortFunc(forms, func(a, b string) int {
			return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
		})
		pairs := make([]string, 0, 2*len(forms))
		for _, f := range forms {
			pairs = append(pairs, f, redacted)
		}
		r.replacer, r.forms = strings.NewReplacer(pairs...), forms
	}
	return r.replacer, r.forms
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

// encodings returns v and the forms it commonly takes when a server, a
// library or a log quotes it: base64 in both alphabets, padded or not, and
// URL-escaped. Some are v itself, or each other.
func encodings(v string) []string {
	b := []byte(v)
	return []string{v,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(v), url.PathEscape(v),
	}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
