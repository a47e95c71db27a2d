package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// auditLines returns n chained audit lines, each with its newline, as the
// gateway writes them.
func auditLines(n int) []string {
	prev := strings.Repeat("0", 64)
	var lines []string
	for i := 1; i <= n; i++ {
		l := fmt.Sprintf(`{"time":"2026-01-02T03:04:05Z","subject":"alice","server":"memory","method":"tools/call","tool":"memory__t%d","outcome":"ok","durationMs":1,"seq":%d,"prev":"%s"}`, i, i, prev)
		sum := sha256.Sum256([]byte(l))
		prev = hex.EncodeToString(sum[:])
		lines = append(lines, l+"\n")
	}
	return lines
}

func writeAudit(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuditVerify: exit 0 when the chain is intact, 1 naming the first
// line that breaks it, 2 for a mistake on the command line.
func TestAuditVerify(t *testing.T) {
	intact := writeAudit(t, auditLines(4))
	if out, errOut, code := cli(t, "audit", "verify", intact); code != 0 || !strings.Contains(out, "intact, 4 lines") {
		t.Errorf("intact: code %d, out %q, err %q", code, out, errOut)
	}
	edited := auditLines(4)
	edited[1] = strings.Replace(edited[1], "alice", "mallory", 1)
	deleted := auditLines(4)
	deleted = append(deleted[:2:2], deleted[3:]...)
	for name, c := range map[string]struct {
		lines []string
		want  string
	}{
		"edited":   {edited, "line 2: edited"},
		"deleted":  {deleted, "line 3: deleted"},
		"not JSON": {append(auditLines(2), "hello\n"), "line 3: not JSON"},
	} {
		path := writeAudit(t, c.lines)
		out, errOut, code := cli(t, "audit", "verify", path)
		if code != 1 || !strings.Contains(errOut, path) || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%s: code %d, out %q, err %q; want 1 and %q", name, code, out, errOut, c.want)
		}
	}
	if _, errOut, code := cli(t, "audit", "verify", filepath.Join(t.TempDir(), "missing")); code != 1 || !strings.Contains(errOut, "missing") {
		t.Errorf("missing file: code %d, err %q", code, errOut)
	}
	for _, args := range [][]string{{"audit"}, {"audit", "verify"}, {"audit", "verify", intact, intact}, {"audit", "check", intact}, {"audit", "verify", "--bogus", intact}} {
		if _, errOut, code := cli(t, args...); code != 2 {
			t.Errorf("%q: code %d, err %q; want 2", args, code, errOut)
		}
	}
}
