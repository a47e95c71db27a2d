package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Payloads (arguments and results) are written only for a server marked
// for it, and then through these bounds and [Redact].
const (
	// MaxPayloadString is the most bytes of a string a payload keeps; the
	// rest is cut, and the string says how long it was.
	MaxPayloadString = 256
	// MaxPayloadBytes bounds a payload as written, in bytes of JSON: one
	// longer is written as a string, its JSON cut there. Arguments and a
	// result together stay far under [MaxLine].
	MaxPayloadBytes = 8 << 10
	// MaxPayloadItems is the most values a payload keeps (keys, elements
	// and scalars, at every depth); the rest are cut, counted.
	MaxPayloadItems = 256
	// MaxPayloadDepth is the most nesting a payload keeps.
	MaxPayloadDepth = 8
)

// scanMargin is how far past MaxPayloadString a string is searched for
// credentials: one that starts in the part kept is found.
const scanMargin = 256

// maxJSONText is the longest result text that RedactText reads as JSON;
// a longer one is only a string.
const maxJSONText = 64 << 10

// Redacted replaces a secret value.
const Redacted = "[redacted]"

// secretKeys are what a key (lowercased, without '-', '_', '.' and
// spaces) that names a secret contains.
var secretKeys = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "authorization", "cookie", "credential", "privatekey", "accesskey", "sessionid"}

// SecretKey reports whether a key names a secret: password, secret, token,
// apikey (api_key, API-Key), authorization, cookie, credential, private
// key, and the like, in any case.
func SecretKey(key string) bool {
	k := strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
	for _, s := range secretKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// credential matches what looks like a credential inside a string: a JWT,
// an Authorization value (Bearer, Basic), API keys of the common shapes
// (sk-..., ghp_..., github_pat_..., xoxb-..., glpat-..., AKIA...), a PEM
// private key.
var credential = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*` +
	`|(?i:\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,})` +
	`|\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_]|proj-|ant-)?[A-Za-z0-9_-]{16,}` +
	`|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}` +
	`|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bglpat-[A-Za-z0-9_-]{20,}` +
	`|\bA(?:KIA|SIA)[0-9A-Z]{16}\b` +
	`|-----BEGIN [A-Z ]*PRIVATE KEY-----`)

// RedactString returns s as a payload keeps it: [Redacted] if it holds
// what looks like a credential, else cut to [MaxPayloadString] bytes,
// saying how long it was.
func RedactString(s string) string {
	// Only what is kept needs looking at, and what starts in it: no
	// credential of these shapes needs more than scanMargin bytes to be
	// seen as one.
	if credential.MatchString(s[:min(len(s), MaxPayloadString+scanMargin)]) {
		return Redacted
	}
	return cut(s, MaxPayloadString)
}

// cut returns s if it is at most n bytes long, else its first n bytes (at
// most: it cuts between runes) ending "…[cut: N bytes]", N being len(s).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s…[cut: %d bytes]", s[:n], len(s))
}

// Redact returns v, a JSON value as encoding/json decodes it, as a payload
// keeps it: a value under a key that names a secret ([SecretKey]) is
// [Redacted]; every string goes through [RedactString]; past
// [MaxPayloadItems] values or [MaxPayloadDepth] levels it is cut, saying
// so; and past [MaxPayloadBytes] of JSON it becomes a string of its JSON,
// cut there.
func Redact(v any) any {
	budget := MaxPayloadItems
	out := redact(v, 0, &budget)
	b, err := json.Marshal(out)
	if err != nil {
		return "[not JSON]"
	}
	if len(b) > MaxPayloadBytes {
		return cut(string(b), MaxPayloadBytes)
	}
	return out
}

// RedactJSON is [Redact] of the JSON in raw; nil for none.
func RedactJSON(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "[not JSON]"
	}
	return Redact(v)
}

// keyValue matches, in text, a key that names a secret (as [SecretKey]
// tells) set to a value: KEY=value, KEY: value, "KEY": "value". Its groups
// are the key with what follows it up to the value, and the value: quoted,
// or up to a space, quote, comma, semicolon, '&' or bracket.
var keyValue = func() *regexp.Regexp {
	words := make([]string, len(secretKeys))
	for i, k := range secretKeys {
		words[i] = strings.Join(strings.Split(k, ""), `[-_. ]?`)
	}
	key := `[A-Za-z0-9_.-]*(?:` + strings.Join(words, "|") + `)[A-Za-z0-9_.-]*`
	return regexp.MustCompile(`(?i)("?` + key + `"?\s*[:=]\s*)("(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[^\s"',;&{}\[\]]+)`)
}()

// redactKeyValues returns s with the value of each [keyValue] in it
// [Redacted] (in the quotes it had).
func redactKeyValues(s string) string {
	return keyValue.ReplaceAllStringFunc(s, func(m string) string {
		v := keyValue.FindStringSubmatchIndex(m)
		prefix, value := m[:v[3]], m[v[4]:v[5]]
		if q := value[0]; q == '"' || q == '\'' {
			return prefix + string(q) + Redacted + string(q)
		}
		return prefix + Redacted
	})
}

// RedactText returns a result's text as a payload keeps it: text that is
// a JSON object or array (of at most 64 KiB) is redacted as one
// ([RedactJSON]) and written back as text; other text is [Redacted] if it
// holds what looks like a credential, and else has the value of each key
// that names a secret ([SecretKey]) set in it (KEY=value, KEY: value,
// "KEY": "value") [Redacted]. Either then goes through [RedactString].
func RedactText(s string) string {
	if t := strings.TrimSpace(s); t != "" && len(t) <= maxJSONText && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		if b, err := json.Marshal(RedactJSON(json.RawMessage(t))); err == nil {
			return RedactString(string(b))
		}
	}
	// Only what RedactString keeps needs looking at, and what starts in
	// it.
	head := s[:min(len(s), MaxPayloadString+scanMargin)]
	if credential.MatchString(head) {
		return Redacted
	}
	return RedactString(redactKeyValues(head) + s[len(head):])
}

// RedactTexts returns a result's text items (a tool's text contents, say)
// as a payload keeps them: each through [RedactText] on its own (so that
// each item of JSON is read as JSON), one a line. Items past the first
// [MaxPayloadString] bytes are left out, counted.
func RedactTexts(texts []string) string {
	var b strings.Builder
	for i, t := range texts {
		if b.Len() >= MaxPayloadString {
			fmt.Fprintf(&b, "\n…[cut: %d more items]", len(texts)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(RedactText(t))
	}
	return b.String()
}

func redact(v any, depth int, budget *int) any {
	*budget--
	switch v := v.(type) {
	case string:
		return RedactString(v)
	case map[string]any:
		if depth >= MaxPayloadDepth {
			return "[cut: too deep]"
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(v))
		for i, k := range keys {
			if *budget <= 0 {
				out["[cut]"] = fmt.Sprintf("%d more keys", len(keys)-i)
				break
			}
			if SecretKey(k) {
				*budget--
				out[RedactString(k)] = Redacted
				continue
			}
			out[RedactString(k)] = redact(v[k], depth+1, budget)
		}
		return out
	case []any:
		if depth >= MaxPayloadDepth {
			return "[cut: too deep]"
		}
		out := make([]any, 0, len(v))
		for i, e := range v {
			if *budget <= 0 {
				out = append(out, fmt.Sprintf("[cut: %d more]", len(v)-i))
				break
			}
			out = append(out, redact(e, depth+1, budget))
		}
		return out
	}
	return v // a number, a bool, nil
}
