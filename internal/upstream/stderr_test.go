package upstream

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/config"
)

// usage returns the lines that are not blank of what a server that needs
// a token prints when it has none: the cause on its first line, then its
// usage (testdata/usage.txt, 56 lines, after github-mcp-server's).
func usage(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/usage.txt")
	if err != nil {
		t.Fatal(err)
	}
	return strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' })
}

// usageKept is what the error of a server that printed usage keeps of it:
// its first line, the cause, and its last stderrTailLines lines.
func usageKept(t *testing.T) string {
	lines := usage(t)
	return lines[0] + " | … | " + strings.Join(lines[len(lines)-stderrTailLines:], " | ")
}

// TestLooksLikeCause: the lines that state a cause are told from the
// others, and of a usage text, only the cause is.
func TestLooksLikeCause(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"Error: No access token was provided.", true},
		{"error: required option '--token <token>' not specified", true},
		{"usage: server.py [-h] --token TOKEN", false},
		{"server.py: error: the following arguments are required: --token", true},
		{"panic: runtime error: invalid memory address or nil pointer dereference", true},
		{"thread 'main' panicked at src/main.rs:4:5:", true},
		{"Traceback (most recent call last):", true},
		{"ValueError: GITHUB_TOKEN must be set", true},
		{"npm ERR! code E404", true},
		{"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod'", true},
		{"connect ECONNREFUSED 127.0.0.1:5432", true},
		{"2025/01/02 10:00:00 GITHUB_TOKEN not set", true},
		{"AccessDenied: User is not authorized to perform s3:GetObject", true},
		{"ls: /srv: No such file or directory", true},
		{"flag provided but not defined: -tokn", true},
		{"listen tcp 127.0.0.1:8080: bind: address already in use", true},
		{"FATAL: password authentication failed for user \"app\"", true},
		{"The API key has expired; create a new one", true},
		{"Secure MCP Filesystem Server running on stdio", false},
		{"Allowed directories: [ '/srv' ]", false},
		{"0 errors, 2 warnings", false},
		{"writing to stderr, not to stdout", false},
		{"Loaded 12 tools; refreshing the token in 3600s", false},
		{"Flags:", false},
		{"      --fail-on-missing-scopes   Exit with an error if the token is missing a required scope", false},
		{"  -h, --help   help for stdio", false},
		{"\tat com.example.Main.handleError(Main.java:12)", false},
		{"    at Object.<anonymous> (/app/error.js:1:1)", false},
		{"", false},
	} {
		if got := looksLikeCause(tc.line); got != tc.want {
			t.Errorf("looksLikeCause(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
	var causes []string
	for _, line := range usage(t) {
		if looksLikeCause(line) {
			causes = append(causes, line)
		}
	}
	if diff := cmp.Diff([]string{"Error: No access token was provided."}, causes); diff != "" {
		t.Errorf("the lines of a usage text that look like a cause (-want +got):\n%s", diff)
	}
}

// TestTailKeepsTheCause: of a usage text after its cause, the tail keeps
// the cause as well as the last lines, with "…" for the lines between.
func TestTailKeepsTheCause(t *testing.T) {
	tl := newTail(stderrTailLines, nil)
	data, err := os.ReadFile("testdata/usage.txt")
	if err != nil {
		t.Fatal(err)
	}
	tl.readFrom(strings.NewReader(string(data)))
	if got, want := tl.String(), usageKept(t); got != want {
		t.Errorf("kept:\n%s\nwant:\n%s", got, want)
	}
}

// TestTailOrderAndBounds: the tail keeps the first stderrCauseLines lines
// that look like a cause and the last lines, in the order they were
// written, "…" wherever lines were left out, and no more than that however
// much is written.
func TestTailOrderAndBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"few", []string{"one", "Error: two", "three"}, "one | Error: two | three"},
		{"no cause", []string{"1", "2", "3", "4", "5"}, "… | 3 | 4 | 5"},
		{"a cause in the tail", []string{"1", "2", "3", "Error: 4", "5"}, "… | 3 | Error: 4 | 5"},
		{"causes", []string{"starting", "Error: one", "x", "fatal: two", "panic: three", "y", "Error: four", "1", "2", "3"},
			"… | Error: one | … | fatal: two | panic: three | … | 1 | 2 | 3"},
		{"a gap of one", []string{"Error: one", "x", "1", "2", "3"}, "Error: one | … | 1 | 2 | 3"},
		{"no gap", []string{"Error: one", "1", "2", "3"}, "Error: one | 1 | 2 | 3"},
		{"a line that reads as a gap", []string{"…", "1"}, "... | 1"},
		{"the separator in a line", []string{"a | b", "c"}, "a ¦ b | c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTail(3, nil)
			tl.readFrom(strings.NewReader(strings.Join(tc.lines, "\n")))
			if got := tl.String(); got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
		})
	}

	tl := newTail(stderrTailLines, nil)
	for n := range 10000 {
		tl.add(fmt.Sprintf("Error: %d", n))
	}
	if got, limit := len(tl.lines), stderrTailLines+stderrCauseLines; got != limit || cap(tl.lines) > 2*limit {
		t.Errorf("after 10000 lines the tail holds %d lines in an array of %d, want %d in at most %d", got, cap(tl.lines), limit, 2*limit)
	}
	if got := tl.String(); !strings.HasPrefix(got, "Error: 0 | Error: 1 | Error: 2 | … | Error: 9980 | ") {
		t.Errorf("kept %q, want the first three and the last twenty", got)
	}
}

// TestShortStderr: a log line shows the last lines of a server's stderr
// that its error carries, and before them the lines that look like a
// cause, and says where there were more.
func TestShortStderr(t *testing.T) {
	tail := newTail(stderrTailLines, nil)
	for n := range 8 {
		tail.add(fmt.Sprintf("line %d", n+1))
	}
	long := fmt.Sprintf("server %q: session: process exited with status 1%s%s", "s", stderrMark, tail)
	lines := usage(t)
	crash := `server "gh": connect: calling "initialize": EOF (process exited with status 1)` + stderrMark + usageKept(t)
	for _, tc := range []struct {
		msg  string
		n    int
		want string
	}{
		{long, 3, `server "s": session: process exited with status 1; stderr: … | line 6 | line 7 | line 8`},
		{long, 8, long},
		{long, 20, long},
		{`server "x": session: lost; stderr: a | Error: b | … | c | d`, 1, `server "x": session: lost; stderr: … | Error: b | … | d`},
		{`server "x": session: lost; stderr: a | Error: b | … | c | d`, 0, `server "x": session: lost; stderr: … | Error: b | …`},
		{crash, 2, `server "gh": connect: calling "initialize": EOF (process exited with status 1); stderr: ` + lines[0] + " | … | " + strings.Join(lines[len(lines)-2:], " | ")},
		{crash, 20, crash},
		{long, 0, `server "s": session: process exited with status 1; stderr: …`},
		{long, -1, `server "s": session: process exited with status 1; stderr: …`},
		{`server "x": connect: command "x" not found`, 3, `server "x": connect: command "x" not found`},
	} {
		if got := ShortStderr(tc.msg, tc.n); got != tc.want {
			t.Errorf("ShortStderr(%q, %d) =\n%q\nwant\n%q", tc.msg, tc.n, got, tc.want)
		}
	}
}

// TestFitError: an error cut to a width loses the last lines of stderr
// first, then those that look like a cause, and only then its own words.
func TestFitError(t *testing.T) {
	const head = `server "s": connect: process exited with status 1`
	msg := head + stderrMark + "starting | Error: no token | … | usage: s [flags] | see s --help" // 123 runes
	for _, tc := range []struct {
		msg   string
		width int
		want  string
	}{
		{msg, 200, msg},
		{msg, 123, msg},
		{msg, 122, head + "; stderr: … | Error: no token | … | usage: s [flags] | see s --help +"},
		{msg, 118, head + "; stderr: … | Error: no token | … | usage: s [flags] | see s --help +"},
		{msg, 117, head + "; stderr: … | Error: no token | … | see s --help +"},
		{msg, 99, head + "; stderr: … | Error: no token | … | see s --help +"},
		{msg, 98, head + "; stderr: … | Error: no token +"},
		{msg, 84, head + "; stderr: … | Error: no token +"},
		{msg, 83, head + "; stderr: … | Error: no token +"},
		{msg, 70, head + "; stderr: … | Error +"},
		{msg, 60, head + "; stderr: +"},
		{msg, 59, head + "; stderr +"},
		{msg, 5, "ser +"},
		{msg, 2, "se"},
		{"a long error of a server with no stderr", 10, "a long e +"},
		{"ünïcödé " + strings.Repeat("é", 20), 12, "ünïcödé éé +"},
	} {
		got := FitError(tc.msg, tc.width, " +")
		if got != tc.want {
			t.Errorf("FitError(%q, %d) =\n%q\nwant\n%q", tc.msg, tc.width, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > tc.width {
			t.Errorf("FitError(%q, %d) is %d runes long", tc.msg, tc.width, n)
		}
	}
}

// TestTailReadsLinesCut: the tail of a child's stderr holds each line cut
// at maxTailLine bytes, however long the line, and a line that holds the
// separator of two lines is still one line for ShortStderr.
func TestTailReadsLinesCut(t *testing.T) {
	huge := strings.Repeat("x", 10<<20)
	tail := newTail(stderrTailLines, nil)
	tail.readFrom(strings.NewReader("first | with a pipe\n" + huge + "\nlast\r\n"))
	want := []string{"first ¦ with a pipe", huge[:maxTailLine] + "…", "last"}
	var got []string
	for _, l := range tail.lines {
		got = append(got, l.text)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines kept (-want +got):\n%s", diff)
	}
	msg := `server "s": session: process exited` + stderrMark + tail.String()
	if got, want := ShortStderr(msg, 1), `server "s": session: process exited; stderr: … | last`; got != want {
		t.Errorf("ShortStderr = %q, want %q", got, want)
	}
	if got := testing.AllocsPerRun(1, func() { newTail(1, nil).readFrom(strings.NewReader(huge)) }); got > 20 {
		t.Errorf("reading a line of 10 MiB took %v allocations, want it read in pieces", got)
	}
}

// TestTailRedacts: the tail keeps no part of a secret: not one that the
// cut at maxTailLine splits, nor one that holds the separator of two lines,
// nor one written in base64.
func TestTailRedacts(t *testing.T) {
	const secret = "sk | planted-5ecret-0123456789"
	var secrets config.Secrets
	secrets.Add(secret)
	tail := newTail(stderrTailLines, &secrets)
	straddles := strings.Repeat("x", maxTailLine-10) + secret + " and more"
	b64 := "as base64: " + base64.StdEncoding.EncodeToString([]byte(secret))
	tail.readFrom(strings.NewReader("token: " + secret + "\n" + straddles + "\n" + b64 + "\n"))
	got := tail.String()
	for _, part := range []string{secret[:10], secret[len(secret)-10:], "planted", "5ecret"} {
		if strings.Contains(got, part) {
			t.Errorf("the tail shows %q of the secret: %s", part, got)
		}
	}
	if want := "token: [redacted] | " + strings.Repeat("x", maxTailLine-10) + "… | as base64: [redacted]"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}

func TestWithoutStderr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{`server "s": connect: EOF`, `server "s": connect: EOF`},
		{`server "s": connect: EOF` + stderrMark + "Error: x | …", `server "s": connect: EOF`},
		{"a: EOF" + stderrMark + "x\nb: EOF" + stderrMark + "y\nc: EOF", "a: EOF\nb: EOF\nc: EOF"},
	} {
		if got := WithoutStderr(tc.in); got != tc.want {
			t.Errorf("WithoutStderr(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzFitError: whatever a server's error holds, FitError and ShortStderr
// do not panic, and FitError keeps to its width.
func FuzzFitError(f *testing.F) {
	f.Add(`server "s": connect: exited; stderr: Error: x | … | a | b`, 20, 1)
	f.Add("; stderr: … | … | | …", 3, -1)
	f.Add("\xff\xfe; stderr: \xff | error", 5, 0)
	f.Fuzz(func(t *testing.T, msg string, width, n int) {
		ShortStderr(msg, n)
		if width < 0 || width > 1000 {
			return
		}
		if got := FitError(msg, width, " …"); utf8.RuneCountInString(got) > width {
			t.Errorf("FitError(%q, %d) = %q, over the width", msg, width, got)
		}
	})
}
