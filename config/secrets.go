package config

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
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
// library or a log quotes it: hex; base64 in both alphabets, padded or not,
// alone or inside a longer text (a Basic credential, "user:" and v);
// URL-escaped as Go, Python and JavaScript escape, with either case of hex.
// Some are v itself, or each other.
func encodings(v string) []string {
	b := []byte(v)
	forms := []string{v, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)), url.QueryEscape(v), url.PathEscape(v)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString(b))
		// Inside a longer text, v's bytes start at any of three offsets
		// of a 3-byte group: what only they make are the characters
		// from the first whole one of theirs to the last.
		raw := enc.WithPadding(base64.NoPadding)
		for k := range 3 {
			s := raw.EncodeToString(append(make([]byte, k), b...))
			start, end := (8*k+5)/6, 8*(k+len(b))/6
			if f := s[start:end]; k == 0 || len(f) >= minEmbeddedForm {
				forms = append(forms, f)
			}
		}
		forms = append(forms, raw.EncodeToString(b))
	}
	for _, safe := range []string{"", "/", "!'()*"} { // every byte, Python's quote, JavaScript's encodeURIComponent
		e := percentEncode(v, safe)
		forms = append(forms, e, lowerHex(e))
	}
	return forms
}

// minEmbeddedForm is the shortest form of a value inside a longer base64
// text that is redacted: a shorter one would match by chance.
const minEmbeddedForm = 8

// percentEncode escapes every byte of s as %XX but the unreserved ones of
// RFC 3986 and those in safe.
func percentEncode(s, safe string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~"+safe, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		const digits = "0123456789ABCDEF"
		b.Write([]byte{'%', digits[c>>4], digits[c&15]})
	}
	return b.String()
}

// lowerHex returns s, percent-encoded, with its escapes in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = toLowerHex(b[i+1]), toLowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func toLowerHex(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
