package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSecretKey: each kind of key that names a secret, in any case and
// spelling, is one; others are not.
func TestSecretKey(t *testing.T) {
	for _, k := range []string{"password", "Password", "db_password", "passwd", "secret", "client_secret", "token", "access_token", "refreshToken",
		"apikey", "api_key", "API-Key", "x-api-key", "authorization", "Authorization", "cookie", "Set-Cookie", "credential", "credentials",
		"private key", "private_key", "privateKey", "aws_access_key_id", "session_id"} {
		if !SecretKey(k) {
			t.Errorf("SecretKey(%q) = false", k)
		}
	}
	for _, k := range []string{"path", "query", "city", "name", "author", "keyword", "count"} {
		if SecretKey(k) {
			t.Errorf("SecretKey(%q) = true", k)
		}
	}
}

// TestRedactString: each shape of credential makes the whole string
// [redacted]; a long string is cut at MaxPayloadString, on a rune
// boundary, with its length; others are kept.
func TestRedactString(t *testing.T) {
	redacted := map[string]string{
		"jwt":           "token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl",
		"bearer":        "Bearer abcdefghijklmnop",
		"bearer lower":  "authorization: bearer abc.def-ghi_jkl",
		"basic":         "Basic dXNlcjpwYXNzd29yZA==",
		"openai":        "key sk-proj-abcdefghijklmnopqrstuv",
		"anthropic":     "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
		"stripe":        "sk_live_abcdefghijklmnopqrstuv",
		"github":        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"github pat":    "github_pat_11ABCDEFG0abcdefghijklmnop",
		"slack":         "xoxb-123456789012-abcdefghij",
		"gitlab":        "glpat-abcdefghijklmnopqrst",
		"aws":           "AKIAIOSFODNN7EXAMPLE",
		"pem":           "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
		"pem pkcs8":     "-----BEGIN PRIVATE KEY-----",
		"in a sentence": "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 to push",
	}
	for name, s := range redacted {
		if got := RedactString(s); got != Redacted {
			t.Errorf("%s: RedactString(%q) = %q, want %q", name, s, got, Redacted)
		}
	}
	for _, s := range []string{"", "hello", "sk-short", "the basic idea", "bearer of news", "eyJ alone", "ghp_short", strings.Repeat("a", MaxPayloadString)} {
		if got := RedactString(s); got != s {
			t.Errorf("RedactString(%q) = %q, want it kept", s, got)
		}
	}
	// A credential that starts in the part kept is found past the cut.
	if got := RedactString(strings.Repeat("a", MaxPayloadString-10) + " ghp_abcdefghijklmnopqrstuvwxyz0123456789"); got != Redacted {
		t.Errorf("a credential across the cut: %q", got)
	}
	long := strings.Repeat("a", MaxPayloadString-1) + "é" + strings.Repeat("b", 100)
	want := strings.Repeat("a", MaxPayloadString-1) + "…[cut: 357 bytes]"
	if got := RedactString(long); got != want {
		t.Errorf("RedactString(long) = %q, want %q", got, want)
	}
}

// TestRedact: values under secret keys are redacted at any depth, whatever
// their type; strings are redacted and cut; items past MaxPayloadItems
// and levels past MaxPayloadDepth are cut, saying so; and the whole is
// bounded by MaxPayloadBytes.
func TestRedact(t *testing.T) {
	in := map[string]any{
		"query":   "weather",
		"limit":   json.Number("3"),
		"headers": map[string]any{"Authorization": "x", "Accept": "json"},
		"auth":    []any{map[string]any{"api_key": 12345, "user": "alice"}, "Bearer abcdefghijklmn"},
		"pin":     map[string]any{"password": map[string]any{"nested": "kept?"}},
	}
	want := map[string]any{
		"query":   "weather",
		"limit":   json.Number("3"),
		"headers": map[string]any{"Authorization": Redacted, "Accept": "json"},
		"auth":    []any{map[string]any{"api_key": Redacted, "user": "alice"}, Redacted},
		"pin":     map[string]any{"password": Redacted},
	}
	if diff := cmp.Diff(want, Redact(in)); diff != "" {
		t.Errorf("Redact (-want +got):\n%s", diff)
	}

	many := make([]any, MaxPayloadItems+50)
	for i := range many {
		many[i] = i
	}
	got := Redact(many).([]any)
	if len(got) > MaxPayloadItems || !strings.HasPrefix(got[len(got)-1].(string), "[cut: ") {
		t.Errorf("Redact of %d items: %d kept, last %v", len(many), len(got), got[len(got)-1])
	}

	var deep any = "bottom"
	for range MaxPayloadDepth + 2 {
		deep = map[string]any{"d": deep}
	}
	b, _ := json.Marshal(Redact(deep))
	if strings.Contains(string(b), "bottom") || !strings.Contains(string(b), "too deep") {
		t.Errorf("Redact of a deep value = %s", b)
	}

	big := map[string]any{}
	for i := range 100 {
		big[strings.Repeat("k", 3)+string(rune('a'+i%26))+strings.Repeat("z", i)] = strings.Repeat("v", MaxPayloadString)
	}
	out, ok := Redact(big).(string)
	if !ok || len(out) > MaxPayloadBytes+64 || !strings.Contains(out, "…[cut: ") {
		t.Errorf("Redact of a big value: %d bytes, a string %v", len(out), ok)
	}
}

// TestRedactJSON: JSON arguments are redacted; numbers are kept exact;
// nothing is nil; what is not JSON says so.
func TestRedactJSON(t *testing.T) {
	got := RedactJSON(json.RawMessage(`{"token": "t0k", "id": 12345678901234567890}`))
	b, _ := json.Marshal(got)
	if string(b) != `{"id":12345678901234567890,"token":"[redacted]"}` {
		t.Errorf("RedactJSON = %s", b)
	}
	if RedactJSON(nil) != nil || RedactJSON(json.RawMessage(" ")) != nil {
		t.Error("RedactJSON of nothing is not nil")
	}
	if RedactJSON(json.RawMessage(`{"a":`)) != "[not JSON]" {
		t.Error("RedactJSON of bad JSON")
	}
}

// TestRedactText: a result's text that is JSON is redacted by its keys;
// other text by its strings.
func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		`{"user": "alice", "secret": "s3"}`:      `{"secret":"[redacted]","user":"alice"}`,
		`[{"cookie": "c"}]`:                      `[{"cookie":"[redacted]"}]`,
		"the key is sk-abcdefghijklmnopqrstuvwx": Redacted,
		"plain text":                             "plain text",
		`{"not": json`:                           `{"not": json`,
		"DB_PASSWORD=hunter2 user=bob":           "DB_PASSWORD=[redacted] user=bob",
		"password: hunter2\nuser: bob":           "password: [redacted]\nuser: bob",
		"X-Api-Key: hunter2, next":               "X-Api-Key: [redacted], next",
		"a?access_token=hunter2&b=1":             "a?access_token=[redacted]&b=1",
		`{"password": "hun\"ter2", "user": "b"`:  `{"password": "[redacted]", "user": "b"`,
		`secret='hunter2'`:                       `secret='[redacted]'`,
		"Authorization: Bearer abcdefghijklmnop": Redacted,
		"tokens are fine: no value here":         "tokens are fine: no value here",
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPayloadLine: a line with the largest payloads stays far under
// MaxLine.
func TestPayloadLine(t *testing.T) {
	big := map[string]any{}
	for i := range 1000 {
		big[strings.Repeat("k", i%200+1)+string(rune('a'+i%26))] = strings.Repeat("v", 10000)
	}
	e := entry(0)
	e.Arguments = Redact(big)
	e.Result = &Result{Text: RedactText(strings.Repeat("r", 1<<20))}
	b, err := json.Marshal(line{Entry: e})
	if err != nil || len(b) > MaxLine/16 {
		t.Errorf("a line with the largest payloads: %d bytes, %v", len(b), err)
	}
}

// TestRedactTexts: each item is redacted on its own, one a line; items
// past MaxPayloadString bytes are left out, counted.
func TestRedactTexts(t *testing.T) {
	if got, want := RedactTexts([]string{`{"a":1}`, `{"password":"hunter2"}`, "plain"}), "{\"a\":1}\n{\"password\":\"[redacted]\"}\nplain"; got != want {
		t.Errorf("RedactTexts = %q, want %q", got, want)
	}
	long := strings.Repeat("x", 300)
	got := RedactTexts([]string{long, "password=hunter2", "c"})
	if want := "…[cut: 300 bytes]\n…[cut: 2 more items]"; !strings.HasSuffix(got, want) || len(got) > 2*MaxPayloadString {
		t.Errorf("RedactTexts of a long first item = %q, want it to end %q", got, want)
	}
	if got := RedactTexts(nil); got != "" {
		t.Errorf("RedactTexts(nil) = %q", got)
	}
}
