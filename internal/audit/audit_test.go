package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func entry(i int) Entry {
	return Entry{
		Time:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600)),
		Subject:  "alice",
		Client:   "inspector",
		Session:  "s1",
		Server:   "memory",
		Method:   "tools/call",
		Tool:     fmt.Sprintf("memory__t%d", i),
		Outcome:  OK,
		Duration: 1500 * time.Microsecond,
	}
}

func writeN(t *testing.T, path string, from, n int) {
	t.Helper()
	writeOpts(t, path, nil, from, n)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")[:strings.Count(string(b), "\n")]
}

func verifyFile(t *testing.T, path string) (int, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Verify(f)
}

// TestLineKeys: a line has the keys of the design, in UTC, with durationMs,
// errorClass only when not ok, and nothing else: no token, no arguments.
func TestLineKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Record(entry(0))
	e := entry(1)
	e.Tool, e.URI, e.Method, e.Outcome, e.ErrorClass = "", "file:///x", "resources/read", Denied, "policy"
	l.Record(e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(first))
	want := []string{"client", "durationMs", "method", "outcome", "prev", "seq", "server", "session", "subject", "time", "tool"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if first["time"] != "2026-01-02T02:04:05Z" || first["durationMs"] != 1.5 || first["outcome"] != "ok" || first["prev"] != Genesis {
		t.Errorf("line 1 = %s", lines[0])
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if second["uri"] != "file:///x" || second["outcome"] != "denied" || second["errorClass"] != "policy" || second["tool"] != nil {
		t.Errorf("line 2 = %s", lines[1])
	}
	if n, err := verifyFile(t, path); n != 2 || err != nil {
		t.Errorf("Verify = %d, %v; want 2, nil", n, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestReopenContinuesChain: a log opened on an existing file continues its
// chain, also after an unfinished last line is ended.
func TestReopenContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeN(t, path, 0, 3)
	writeN(t, path, 3, 2)
	if n, err := verifyFile(t, path); n != 5 || err != nil {
		t.Fatalf("Verify = %d, %v; want 5, nil", n, err)
	}
	var last struct{ Seq int64 }
	lines := readLines(t, path)
	if err := json.Unmarshal([]byte(lines[4]), &last); err != nil || last.Seq != 5 {
		t.Errorf("seq of line 5 = %d, %v", last.Seq, err)
	}
}

// TestConcurrentWriters: many goroutines recording at once give one valid
// chain with every entry in it.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				l.Record(entry(g*100 + i))
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := verifyFile(t, path); n != 400 || err != nil || l.Dropped() != 0 {
		t.Errorf("Verify = %d, %v (dropped %d); want 400, nil", n, err, l.Dropped())
	}
}

// failingWriter fails while fail is set, and signals each write.
type failingWriter struct {
	mu    sync.Mutex
	fail  bool
	buf   bytes.Buffer
	wrote chan struct{}
}

func (w *failingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer func() { w.mu.Unlock(); w.wrote <- struct{}{} }()
	if w.fail {
		return 0, errors.New("disk full")
	}
	return w.buf.Write(b)
}

func (w *failingWriter) setFail(f bool) { w.mu.Lock(); w.fail = f; w.mu.Unlock() }

// countHandler counts records by message.
type countHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

// TestWriteFailure: a failing write neither blocks nor fails Record, is
// logged once per outage, and the chain goes on from the last line
// written when writing works again.
func TestWriteFailure(t *testing.T) {
	h := &countHandler{}
	w := &failingWriter{wrote: make(chan struct{}, 100)}
	l := newLog("test", slog.New(h))
	l.w = w
	go l.run()
	for round := range 2 {
		w.setFail(true)
		for i := range 3 {
			l.Record(entry(i)) // never waits, never fails
			<-w.wrote
		}
		w.setFail(false)
		l.Record(entry(round))
		<-w.wrote
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"audit log: write failed; entries are lost until it works again",
		"audit log: writing works again",
		"audit log: write failed; entries are lost until it works again",
		"audit log: writing works again",
	}
	if !slices.Equal(h.msgs, want) {
		t.Errorf("logged %q, want %q", h.msgs, want)
	}
	if n, err := Verify(&w.buf); n != 2 || err != nil {
		t.Errorf("Verify = %d, %v; want 2, nil", n, err)
	}
}

// blockingWriter blocks every write until release is closed.
type blockingWriter struct{ release chan struct{} }

func (w blockingWriter) Write(b []byte) (int, error) { <-w.release; return len(b), nil }

// TestFullQueueDrops: a writer that hangs never makes Record wait: past
// QueueLines entries are dropped, counted and logged naming the limit.
func TestFullQueueDrops(t *testing.T) {
	h := &countHandler{}
	w := blockingWriter{release: make(chan struct{})}
	l := newLog("test", slog.New(h))
	l.w = w
	go l.run()
	for i := range QueueLines + 10 {
		l.Record(entry(i))
	}
	if d := l.Dropped(); d < 9 {
		t.Errorf("dropped %d, want at least 9", d)
	}
	close(w.release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.msgs) != 1 || !strings.Contains(h.msgs[0], "dropped") {
		t.Errorf("logged %q", h.msgs)
	}
	l.Record(entry(0)) // after Close: dropped, no panic
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "no", "such", "audit.jsonl"), nil); err == nil || !strings.Contains(err.Error(), "audit.jsonl") {
		t.Errorf("Open in a missing dir: %v", err)
	}
	long := filepath.Join(dir, "long.jsonl")
	if err := os.WriteFile(long, bytes.Repeat([]byte("x"), MaxLine+10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(long, nil); !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "MaxLine") {
		t.Errorf("Open on a too long last line: %v", err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func prevOf(t *testing.T, line string) string {
	t.Helper()
	var v struct{ Prev string }
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatal(err)
	}
	return v.Prev
}

// TestLongFields: an entry with a 2 MiB URI, tool and subject (a client's
// to choose) is written with them cut to MaxField, and the log both
// verifies and opens again to continue its chain.
func TestLongFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("u", 2<<20)
	e := entry(0)
	e.Method, e.URI, e.Tool, e.Subject = "resources/subscribe", "file:///"+long, long, long
	l.Record(e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writeN(t, path, 1, 1) // fails if Open cannot continue from the long line
	if n, err := verifyFile(t, path); n != 2 || err != nil {
		t.Fatalf("Verify = %d, %v; want 2, nil", n, err)
	}
	var got Entry
	if err := json.Unmarshal([]byte(readLines(t, path)[0]), &got); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]struct{ got, sent string }{"uri": {got.URI, e.URI}, "tool": {got.Tool, e.Tool}, "subject": {got.Subject, e.Subject}} {
		suffix := fmt.Sprintf("…[cut: %d bytes]", len(f.sent))
		if len(f.got) != MaxField+len(suffix) || !strings.HasSuffix(f.got, suffix) {
			t.Errorf("%s: %d bytes ending %q; want it cut to %d bytes ending %q", name, len(f.got), f.got[max(len(f.got)-30, 0):], MaxField, suffix)
		}
	}
}

// TestPayloadsDropped: a line that its payloads would take past MaxLine is
// written without them, marked payloadsDropped, and the log verifies and
// opens again.
func TestPayloadsDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs bytes.Buffer
	l, err := Open(path, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	e := entry(0)
	e.Arguments = map[string]any{"a": strings.Repeat("x", MaxLine)} // not through Redact
	e.Result = &Result{Text: "kept only if it fits"}
	l.Record(e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writeN(t, path, 1, 1)
	if n, err := verifyFile(t, path); n != 2 || err != nil {
		t.Fatalf("Verify = %d, %v; want 2, nil", n, err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(readLines(t, path)[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got["payloadsDropped"] != true || got["arguments"] != nil || got["result"] != nil || got["tool"] != "memory__t0" {
		t.Errorf("line 1 = %v; want payloadsDropped, no arguments or result", got)
	}
	if !strings.Contains(logs.String(), "MaxLine") {
		t.Errorf("log %q does not name MaxLine", logs.String())
	}
}

// TestReopenMaxLine: a log whose last line is exactly MaxLine bytes (as
// long as Verify takes) opens to continue its chain.
func TestReopenMaxLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeN(t, path, 0, 1)
	lines := readLines(t, path)
	ln := line{Entry: entry(1), Seq: 2, Prev: hash([]byte(strings.TrimSuffix(lines[0], "\n")))}
	ln.Result = &Result{}
	b, err := json.Marshal(ln)
	if err != nil {
		t.Fatal(err)
	}
	ln.Result.Text = strings.Repeat("r", MaxLine-len(b))
	if b, err = json.Marshal(ln); err != nil || len(b) != MaxLine {
		t.Fatalf("line of %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(path, []byte(lines[0]+string(b)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeN(t, path, 2, 1)
	if n, err := verifyFile(t, path); n != 3 || err != nil {
		t.Fatalf("Verify = %d, %v; want 3, nil", n, err)
	}
}

// TestOneWriter: a log that another Log (another process, as flock sees
// it) holds open is refused, saying why; once closed, it opens again.
func TestOneWriter(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock: one writer per file is up to the operator")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	first, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := Open(path, nil); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), path) {
		if second != nil {
			second.Close()
		}
		t.Errorf("a second Open = %v, want ErrInUse naming %s", err, path)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	again.Close()
}
