package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/audit"
	"github.com/switchboard-mcp/switchboard/internal/identity/issuertest"
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
	if _, errOut, code := cli(t, "audit", "verify", filepath.Join(t.TempDir(), "missing")); code != 2 || !strings.Contains(errOut, "missing") {
		t.Errorf("missing file: code %d, err %q; want 2", code, errOut)
	}
	for _, args := range [][]string{{"audit"}, {"audit", "verify"}, {"audit", "verify", "-", "-"}, {"audit", "check", intact},
		{"audit", "verify", "--bogus", intact}, {"audit", "verify", "--anchor", "12", intact}} {
		if _, errOut, code := cli(t, args...); code != 2 {
			t.Errorf("%q: code %d, err %q; want 2", args, code, errOut)
		}
	}
}

// TestAuditVerifyRotated: the rotated files, oldest first, verify as one
// chain; one left out, or out of order, breaks it at the file and line
// that follows; a rotated file alone verifies and says where it starts;
// the last line printed is an anchor that a later verify holds the log to.
func TestAuditVerifyRotated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := gateway.OpenAuditLog(path, &gateway.AuditLogOptions{MaxBytes: 1}) // a line a file
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		log.Record(audit.Entry{Time: time.Now(), Subject: "alice", Server: "m", Method: "tools/call", Tool: fmt.Sprint("m__t", i), Outcome: audit.OK})
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	all := []string{path + ".3", path + ".2", path + ".1", path}
	out, errOut, code := cli(t, append([]string{"audit", "verify"}, all...)...)
	if code != 0 || !strings.Contains(out, "intact, 4 lines, seq 1 to 4") || strings.Contains(out, "starts after") {
		t.Fatalf("all files: code %d, out %q, err %q", code, out, errOut)
	}
	anchor := regexp.MustCompile(`--anchor (4:[0-9a-f]{64})`).FindStringSubmatch(out)
	if anchor == nil {
		t.Fatalf("no anchor in %q", out)
	}
	if out, errOut, code := cli(t, "audit", "verify", path+".1"); code != 0 || !strings.Contains(out, "intact, 1 lines, seq 3 to 3") || !strings.Contains(out, "starts after seq 2") {
		t.Errorf("a rotated file alone: code %d, out %q, err %q", code, out, errOut)
	}
	if out, errOut, code := cli(t, "audit", "verify", "--anchor", anchor[1], path+".1", path); code != 0 || !strings.Contains(out, "anchor "+anchor[1]+": held") {
		t.Errorf("--anchor, intact: code %d, out %q, err %q", code, out, errOut)
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"left out":     {[]string{path + ".3", path + ".1"}, path + ".1 line 1: deleted: 1 line(s)"},
		"out of order": {[]string{path + ".2", path + ".3"}, path + ".3 line 1: it starts a new chain"},
		"last deleted": {[]string{"--anchor", anchor[1], path + ".2", path + ".1"}, "ends at seq 3, before the anchor's seq 4"},
	} {
		out, errOut, code := cli(t, append([]string{"audit", "verify"}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%s: code %d, out %q, err %q; want 1 and %q", name, code, out, errOut, c.want)
		}
	}
}

// TestServeAudit: serve with gateway.audit writes a line per call, ok or
// denied, with the caller's subject; the log verifies with audit verify,
// and a second start continues its chain.
func TestServeAudit(t *testing.T) {
	isolate(t)
	is := issuertest.New(t)
	rules := []map[string]any{{"allow": map[string]any{"servers": []string{"m"}}, "when": "'eng' in identity.groups"}}
	path := writePolicyConfig(t, is, rules)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	editConfig(t, path, func(cfg map[string]any) {
		cfg["gateway"].(map[string]any)["audit"] = map[string]any{"file": logPath}
	})
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	for run := range 2 {
		g := startServe(t, "--config", path)
		g.waitLog(t, settledRE)
		claims := is.Claims(oauthAudience, "mcp", time.Now())
		claims["sub"], claims["groups"] = "alice", []string{"eng"}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{is.Token(t, claims), transport}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, g.log)
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m__echo", Arguments: map[string]any{"x": "s3cr3t"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "n__echo", Arguments: map[string]any{}}); err == nil {
			t.Fatal("n__echo: no error")
		}
		cs.Close()
		if err := g.stop(t, os.Interrupt); err != nil {
			t.Fatalf("run %d: serve: %v\n%s", run, err, g.log)
		}
		if strings.Contains(g.log.String(), "gateway.audit") {
			t.Errorf("run %d: the log warns of gateway.audit:\n%s", run, g.log)
		}
	}
	out, errOut, code := cli(t, "audit", "verify", logPath)
	if code != 0 || !strings.Contains(out, "intact, 4 lines") {
		t.Fatalf("audit verify: code %d, out %q, err %q", code, out, errOut)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if strings.Count(log, `"subject":"alice"`) != 4 || strings.Count(log, `"outcome":"denied"`) != 2 || strings.Count(log, `"outcome":"ok"`) != 2 || strings.Contains(log, "s3cr3t") {
		t.Errorf("the audit log:\n%s", log)
	}
}

// TestServeAuditStdio: serve --stdio refuses an audit log on standard
// output, which carries the protocol.
func TestServeAuditStdio(t *testing.T) {
	isolate(t)
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}, "gateway": {"audit": {"file": "-"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := cli(t, "serve", "--stdio", "--config", path); code != 1 || !strings.Contains(errOut, `gateway.audit.file "-"`) {
		t.Errorf("code %d, err %q", code, errOut)
	}
}
