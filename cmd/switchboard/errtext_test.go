package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// usageServer writes a stdio server that needs a token and has none, as a
// shell script: it prints the cause, then its usage, 56 lines in all, to
// stderr, and exits 1. It returns a config that runs it as "gh", and the
// lines it prints.
func usageServer(t *testing.T) (cfg string, lines []string) {
	t.Helper()
	lines = []string{"Error: No access token was provided.", "Usage:", "  gh-server stdio [flags]", "Flags:"}
	for n := len(lines); n < 55; n++ {
		lines = append(lines, fmt.Sprintf("      --option-%02d string   option %d; an invalid value is an error (required with --option-%02d)", n, n, n+1))
	}
	lines = append(lines, `Use "gh-server --help" for more information.`)
	script := filepath.Join(t.TempDir(), "gh-server")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >&2 <<'EOF'\n"+strings.Join(lines, "\n")+"\nEOF\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, nil, map[string]any{"gh": map[string]any{"command": script}}), lines
}

// TestFailedServerShowsItsCause: a server that prints its usage after the
// cause of its failure, and exits. check (the built binary), the status
// tables (of the config, and of a gateway), status --json, serve's log and
// its /status page all show the cause; the tables cut the error to
// maxTableError, and status --json and /status show all that was kept: the
// cause and the last 20 lines.
func TestFailedServerShowsItsCause(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the server is a shell script")
	}
	isolate(t)
	cfg, lines := usageServer(t)
	kept := lines[0] + " | … | " + strings.Join(lines[len(lines)-20:], " | ")

	out, err := exec.Command(binary, "check", "--config", cfg).Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("check: %v, want exit status 1", err)
	}
	checkCell(t, "check", string(out), "FAIL  gh: ", lines[0], "… (status --json shows all)")

	out2, _, _ := cli(t, "status", "--config", cfg, "--timeout=1m")
	checkCell(t, "status", out2, "gh ", lines[0], "… (--json shows all)")

	out2, _, _ = cli(t, "status", "--config", cfg, "--json", "--timeout=1m")
	var st []struct{ Name, Error string }
	if err := json.Unmarshal([]byte(out2), &st); err != nil || len(st) != 1 {
		t.Fatalf("status --json: %v\n%s", err, out2)
	}
	if !strings.HasSuffix(st[0].Error, "; stderr: "+kept) {
		t.Errorf("status --json: error %q\nwant it to end with what was kept of stderr: %q", st[0].Error, kept)
	}

	g := startServe(t, "--config", cfg)
	logged := lines[0] + " | … | " + strings.Join(lines[len(lines)-logStderrLines:], " | ")
	quoted := strconv.Quote(logged)
	line := g.waitLog(t, regexp.MustCompile(`msg="server not connected; retrying in the background" server=gh .*`))[0]
	if !strings.HasSuffix(line, quoted[1:]) {
		t.Errorf("serve's log line:\n%s\nwant it to end with the cause and the last %d lines:\n%s", line, logStderrLines, quoted[1:])
	}
	out2, _, _ = cli(t, "status", "--gateway", g.url)
	checkCell(t, "status --gateway", out2, "gh ", lines[0], "… (--json shows all)")
	var report struct {
		Servers []struct{ Name, Error string }
	}
	if body := fetch(t, g.url+"/status", "application/json"); json.Unmarshal([]byte(body), &report) != nil || len(report.Servers) != 1 ||
		!strings.HasSuffix(report.Servers[0].Error, "; stderr: "+kept) {
		t.Errorf("/status: %+v\nwant the error to end with what was kept of stderr: %q", report, kept)
	}
}

// checkCell checks that the line of out that starts with row ends with an
// error of at most maxTableError characters that holds cause and ends
// with more.
func checkCell(t *testing.T, name, out, row, cause, more string) {
	t.Helper()
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, row) {
			continue
		}
		_, cell, _ := strings.Cut(strings.TrimSpace(line), `server "gh": `)
		cell = `server "gh": ` + cell
		if n := utf8.RuneCountInString(cell); n > maxTableError || !strings.Contains(cell, cause) || !strings.HasSuffix(cell, more) {
			t.Errorf("%s: the error of %d characters:\n%s\nwant at most %d, with %q, ending with %q", name, n, cell, maxTableError, cause, more)
		}
		return
	}
	t.Errorf("%s: no line starts with %q:\n%s", name, row, out)
}

// TestToolsAndCallCutAServersError: tools and call name a failed server
// with the cause it printed, not the whole usage text after it.
func TestToolsAndCallCutAServersError(t *testing.T) {
	isolate(t)
	script := filepath.Join(t.TempDir(), "gh.sh")
	usage := "echo 'Error: No access token was provided.' >&2\n" + strings.Repeat("echo '  --option  what it does, at length, as usage texts go on' >&2\n", 55) + "exit 1\n"
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+usage), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, nil, map[string]any{"gh": map[string]any{"command": script}})
	for _, args := range [][]string{{"tools"}, {"call", "gh__x"}} {
		_, stderr, code := cli(t, append(args, "--config", cfg)...)
		line, _, _ := strings.Cut(strings.TrimPrefix(stderr, "switchboard: "), "\n")
		if code != 1 || !strings.Contains(line, "Error: No access token was provided.") || utf8.RuneCountInString(line) > maxLineError {
			t.Errorf("%s: exit %d, first line of stderr (%d characters):\n%s\nwant the cause, within %d", args[0], code, utf8.RuneCountInString(line), line, maxLineError)
		}
	}
}
