package audit

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeOpts writes entries from..from+n-1 to a log at path opened with o.
func writeOpts(t *testing.T, path string, o *Options, from, n int) {
	t.Helper()
	l, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := from; i < from+n; i++ {
		l.Record(entry(i))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// sources opens the files at paths, oldest first, for VerifyFiles.
func sources(t *testing.T, paths ...string) []Source {
	t.Helper()
	var out []Source
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		out = append(out, Source{Name: filepath.Base(p), R: f})
	}
	return out
}

// lineSize is the size of a line of entry(i), with its newline, for a
// one-digit i.
func lineSize(t *testing.T) int64 {
	path := filepath.Join(t.TempDir(), "one.jsonl")
	writeOpts(t, path, nil, 0, 1)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestRotation: past MaxBytes a file is renamed path.1 (older ones shifted,
// the one past MaxFiles removed) and a new one started, mode 0600, each
// file holding whole lines and no more than MaxBytes; the chain goes on
// across the files, and the first line of each new file continues the
// last of the file before.
func TestRotation(t *testing.T) {
	size := lineSize(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	// Three lines a file (the test's lines differ in one digit at most, and
	// by `,"continues":true`).
	writeOpts(t, path, &Options{MaxBytes: 3*size + 20, MaxFiles: 2}, 0, 10)
	var names []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lock") {
			continue // see TestOneWriter
		}
		names = append(names, e.Name())
		fi, err := e.Info()
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() > 3*size+20 {
			t.Errorf("%s: %v, %v; want mode 0600, at most %d bytes", e.Name(), fi.Mode(), err, 3*size+20)
		}
	}
	if want := []string{"audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"}; !slices.Equal(names, want) {
		t.Fatalf("files %q, want %q", names, want)
	}
	// 10 lines: 1-3 (removed), 4-6 (.2), 7-9 (.1), 10.
	sum, err := VerifyFiles(sources(t, path+".2", path+".1", path), nil)
	if err != nil || sum.Lines != 7 || sum.FirstSeq != 4 || sum.Start == Genesis || sum.Last.Seq != 10 {
		t.Fatalf("VerifyFiles = %+v, %v; want 7 lines from seq 4 to 10", sum, err)
	}
	last := readLines(t, path+".1")[2]
	first := readLines(t, path)[0]
	var head struct {
		Prev      string
		Seq       int64
		Continues bool
	}
	if err := json.Unmarshal([]byte(first), &head); err != nil {
		t.Fatal(err)
	}
	if head.Prev != hash([]byte(strings.TrimSuffix(last, "\n"))) || head.Seq != 10 || !head.Continues {
		t.Errorf("first line of the new file: %s; want the hash of %s, seq 10, continues", first, last)
	}
	if sum.Last.Hash != hash([]byte(strings.TrimSuffix(first, "\n"))) {
		t.Errorf("Last %v is not the hash of the last line", sum.Last)
	}
	// A rotated file verifies alone, and says where it starts.
	sum, err = VerifyFiles(sources(t, path+".1"), nil)
	if err != nil || sum.Lines != 3 || sum.FirstSeq != 7 || sum.Start != prevOf(t, readLines(t, path+".1")[0]) {
		t.Errorf("VerifyFiles(.1) = %+v, %v", sum, err)
	}
	// An anchor kept from the line before it, in a file rotated away,
	// holds.
	if _, err := VerifyFiles(sources(t, path+".1"), &Anchor{6, sum.Start}); err != nil {
		t.Errorf("VerifyFiles(.1) with the anchor of seq 6: %v", err)
	}
	// Reopened, the log goes on rotating and chaining.
	writeOpts(t, path, &Options{MaxBytes: 3*size + 20, MaxFiles: 2}, 0, 3)
	if sum, err := VerifyFiles(sources(t, path+".2", path+".1", path), nil); err != nil || sum.FirstSeq != 7 || sum.Last.Seq != 13 {
		t.Errorf("after a reopen: VerifyFiles = %+v, %v; want seq 7 to 13", sum, err)
	}
}

// TestRotationLongLine: a line longer than MaxBytes goes whole to a file
// of its own.
func TestRotationLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l.Record(entry(i))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path + ".2", path + ".1", path} {
		if lines := readLines(t, p); len(lines) != 1 {
			t.Errorf("%s: %d lines, want 1", p, len(lines))
		}
	}
	if sum, err := VerifyFiles(sources(t, path+".2", path+".1", path), nil); err != nil || sum.Lines != 3 || sum.Start != Genesis {
		t.Errorf("VerifyFiles = %+v, %v", sum, err)
	}
}

// TestReopenAfterRotation: a log opened on an empty file (its writer died
// right after a rotation) continues the chain of path.1.
func TestReopenAfterRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeN(t, path, 0, 3)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "")
	writeN(t, path, 3, 2)
	if sum, err := VerifyFiles(sources(t, path+".1", path), nil); err != nil || sum.Lines != 5 || sum.Last.Seq != 5 {
		t.Errorf("VerifyFiles = %+v, %v; want 5 lines", sum, err)
	}
	if sum, err := VerifyFiles(sources(t, path), nil); err != nil || sum.FirstSeq != 4 {
		t.Errorf("VerifyFiles(path) = %+v, %v; want a start at seq 4", sum, err)
	}
}

// TestRotationFailure: a rotation that fails is logged once, and the
// lines go on, chained, to the file as it is.
func TestRotationFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeN(t, path, 0, 1)
	// path.1, the oldest with MaxFiles 1, cannot be removed.
	if err := os.MkdirAll(filepath.Join(path+".1", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	h := &countHandler{}
	writeOpts(t, path, &Options{MaxBytes: 100, MaxFiles: 1, Logger: slog.New(h)}, 1, 3)
	if n, err := verifyFile(t, path); n != 4 || err != nil {
		t.Errorf("Verify = %d, %v; want 4, nil", n, err)
	}
	if len(h.msgs) != 1 || !strings.Contains(h.msgs[0], "rotation failed") {
		t.Errorf("logged %q; want one rotation failure", h.msgs)
	}
}

// TestStdoutNeverRotates: "-" has no file to rotate.
func TestStdoutNeverRotates(t *testing.T) {
	l, err := Open("-", &Options{MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.file != nil || l.maxBytes != 0 {
		t.Errorf("stdout: file %v, maxBytes %d", l.file, l.maxBytes)
	}
}

// TestVerifyFilesBreaks: across files, a missing file, files out of order,
// a file that starts a new chain, the first lines of a rotated file
// deleted, and an edit in a later file are breaks naming the file and the
// line.
func TestVerifyFilesBreaks(t *testing.T) {
	size := lineSize(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeOpts(t, path, &Options{MaxBytes: 3*size + 20}, 0, 10) // .3: 1-3, .2: 4-6, .1: 7-9, path: 10
	other := filepath.Join(dir, "other.jsonl")
	writeN(t, other, 0, 2)
	cutFirst := filepath.Join(dir, "cut.jsonl")
	writeFile(t, cutFirst, strings.Join(readLines(t, path+".2")[1:], ""))
	edited := filepath.Join(dir, "edited.jsonl")
	l := readLines(t, path+".1")
	l[1] = strings.Replace(l[1], `"subject":"alice"`, `"subject":"mallory"`, 1)
	writeFile(t, edited, strings.Join(l, ""))
	cases := []struct {
		name  string
		files []string
		file  string
		line  int
		why   string
	}{
		{"missing middle file", []string{path + ".3", path + ".1"}, "audit.jsonl.1", 1, "deleted: 3 line(s)"},
		{"newest first", []string{path + ".1", path + ".2"}, "audit.jsonl.2", 1, "give them oldest first"},
		{"out of order", []string{path + ".2", path + ".3"}, "audit.jsonl.3", 1, "genesis"},
		{"new chain", []string{path + ".3", other}, "other.jsonl", 1, "new chain"},
		{"first lines of a rotated file deleted", []string{cutFirst}, "cut.jsonl", 1, "deleted from the start"},
		{"edited in a later file", []string{path + ".2", edited}, "edited.jsonl", 2, "edited"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := VerifyFiles(sources(t, c.files...), nil)
			var be *BreakError
			if !errors.As(err, &be) || be.File != c.file || be.Line != c.line || !strings.Contains(be.Reason, c.why) {
				t.Fatalf("VerifyFiles = %v; want %s line %d, %q", err, c.file, c.line, c.why)
			}
		})
	}
	if sum, err := VerifyFiles(sources(t, path+".3", path+".2", path+".1", path), nil); err != nil || sum.Lines != 10 || sum.Start != Genesis {
		t.Errorf("all files: %+v, %v", sum, err)
	}
}

// TestAnchor: an anchor kept from an earlier verify holds while lines are
// only added; it finds the last lines deleted, or deleted and written anew.
func TestAnchor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeN(t, path, 0, 4)
	sum, err := VerifyFiles(sources(t, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	anchor := sum.Last
	writeN(t, path, 4, 2)
	hashOnly := Anchor{Hash: anchor.Hash}
	for _, a := range []*Anchor{&anchor, &hashOnly} {
		if _, err := VerifyFiles(sources(t, path), a); err != nil {
			t.Errorf("anchor %v, lines added: %v", a, err)
		}
	}
	lines := readLines(t, path)
	// Delete the last three lines (the anchor's among them).
	cut := filepath.Join(dir, "cut.jsonl")
	writeFile(t, cut, strings.Join(lines[:3], ""))
	// The same, then written anew: the gateway restarts on it.
	rewritten := filepath.Join(dir, "rewritten.jsonl")
	writeFile(t, rewritten, strings.Join(lines[:3], ""))
	writeN(t, rewritten, 10, 3)
	for _, c := range []struct {
		name, file string
		anchor     Anchor
		line       int
		why        string
	}{
		{"deleted", cut, anchor, 0, "ends at seq 3, before the anchor's seq 4"},
		{"deleted, hash only", cut, hashOnly, 0, "no line is the anchor"},
		{"written anew", rewritten, anchor, 4, "edited or replaced"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := VerifyFiles(sources(t, c.file), &c.anchor)
			var be *BreakError
			if !errors.As(err, &be) || be.Line != c.line || !strings.Contains(be.Reason, c.why) {
				t.Fatalf("VerifyFiles = %v; want line %d, %q", err, c.line, c.why)
			}
		})
	}
}

func TestParseAnchor(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for s, want := range map[string]Anchor{"12:" + h: {12, h}, h: {0, h}, "3:" + strings.ToUpper(h): {3, h}} {
		if got, err := ParseAnchor(s); err != nil || got != want {
			t.Errorf("ParseAnchor(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "12", "x:" + h, "0:" + h, "1:" + h[1:], h + "zz"} {
		if _, err := ParseAnchor(s); !errors.Is(err, ErrBadAnchor) {
			t.Errorf("ParseAnchor(%q) = %v; want ErrBadAnchor", s, err)
		}
	}
}
