package audit

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// chain returns a valid log of n lines, each with its newline.
func chain(t *testing.T, n int) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeN(t, path, 0, n)
	return readLines(t, path)
}

func TestVerifyIntact(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		if got, err := Verify(strings.NewReader(strings.Join(chain(t, n), ""))); got != n || err != nil {
			t.Errorf("%d lines: Verify = %d, %v", n, got, err)
		}
	}
}

// TestVerifyBreaks: each kind of damage is an error naming the first bad
// line, 1-based, and why.
func TestVerifyBreaks(t *testing.T) {
	edit := func(s string) string { return strings.Replace(s, `"subject":"alice"`, `"subject":"mallory"`, 1) }
	cases := []struct {
		name   string
		damage func(l []string) []string
		line   int
		reason string
	}{
		{"edited line 3", func(l []string) []string { l[2] = edit(l[2]); return l }, 3, "edited"},
		{"edited line 1", func(l []string) []string { l[0] = edit(l[0]); return l }, 1, "edited"},
		{"inserted copy at 3", func(l []string) []string { return append(l[:2:2], append([]string{edit(l[1])}, l[2:]...)...) }, 3, "inserted"},
		{"inserted junk chained at 3", func(l []string) []string {
			return append(l[:2:2], append([]string{`{"prev":"` + hash([]byte(strings.TrimSuffix(l[1], "\n"))) + `","seq":3}` + "\n"}, l[2:]...)...)
		}, 3, "inserted"},
		{"deleted line 3", func(l []string) []string { return append(l[:2:2], l[3:]...) }, 3, "deleted"},
		{"deleted lines 2-3", func(l []string) []string { return append(l[:1:1], l[3:]...) }, 2, "deleted"},
		{"deleted line 1", func(l []string) []string { return l[1:] }, 1, "genesis"},
		{"truncated last line", func(l []string) []string { l[4] = l[4][:len(l[4])/2]; return l }, 5, "truncated"},
		{"not JSON at 2", func(l []string) []string { l[1] = "hello\n"; return l }, 2, "not JSON"},
		{"no prev at 2", func(l []string) []string { l[1] = "{}\n"; return l }, 2, "no prev"},
		{"too long at 4", func(l []string) []string { l[3] = strings.Repeat("x", MaxLine+1) + "\n"; return l }, 4, "MaxLine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Verify(strings.NewReader(strings.Join(c.damage(chain(t, 5)), "")))
			var be *BreakError
			if !errors.As(err, &be) {
				t.Fatalf("Verify = %v, want a *BreakError", err)
			}
			if be.Line != c.line || !strings.Contains(be.Error(), c.reason) {
				t.Errorf("Verify = %q (line %d), want line %d and %q", err, be.Line, c.line, c.reason)
			}
		})
	}
}

// TestVerifyAfterCrash: a log whose writer died mid-line and was reopened
// reads as damaged at that line, and the chain goes on after it.
func TestVerifyAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := chain(t, 3)
	l[2] = l[2][:10]
	writeFile(t, path, strings.Join(l, ""))
	writeN(t, path, 3, 2)
	lines := readLines(t, path)
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 5", len(lines))
	}
	var be *BreakError
	if _, err := verifyFile(t, path); !errors.As(err, &be) || be.Line != 3 {
		t.Errorf("Verify = %v, want line 3", err)
	}
	// From line 4 on the chain holds: line 4 vouches for the damaged line 3.
	if hash(bytes.TrimSuffix([]byte(lines[2]), []byte("\n"))) != prevOf(t, lines[3]) {
		t.Error("line 4 does not continue from line 3")
	}
}
