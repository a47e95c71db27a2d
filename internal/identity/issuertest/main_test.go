package issuertest

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestToken: a token is three parts, and its issuer serves its key.
func TestToken(t *testing.T) {
	is := New(t)
	tok := is.Token(t, map[string]any{"sub": "x"})
	if n := len(splitDots(tok)); n != 3 {
		t.Errorf("token of %d parts", n)
	}
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
