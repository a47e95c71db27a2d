package toolvec

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testEndpoint = "http://embed.example/v1/embeddings"

// keptRanker returns a ranker over the fixture's tools that keeps its
// vectors in dir, ready, and its log.
func keptRanker(t *testing.T, e Embedder, dir string) (*Ranker, *logCount) {
	t.Helper()
	logs := &logCount{}
	_, r := fixture(t, e, &Options{Logger: slog.New(logs), Endpoint: testEndpoint, Dir: dir})
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r, logs
}

// readKept returns the vectors of the fixture's file in dir.
func readKept(t *testing.T, dir string) []stored {
	t.Helper()
	list, err := readVectors(filepath.Join(dir, FileName(testEndpoint, "m")), identity(testEndpoint, "m"))
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestKeptAcrossRestart: a second ranker over the same directory asks the
// endpoint for none of the texts the first embedded, fuses with the kept
// vectors at once, and the file is its owner's alone.
func TestKeptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	first := &fakeEmbedder{}
	r, _ := keptRanker(t, first, dir)
	r.Close()
	if got := len(first.embedded()); got != 4 {
		t.Fatalf("the first ranker embedded %d texts, want 4", got)
	}
	path := filepath.Join(dir, FileName(testEndpoint, "m"))
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode is %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "embed.example") || strings.Contains(string(data), "entities") {
		t.Error("the file holds the endpoint's URL or a tool's text")
	}
	if got := len(readKept(t, dir)); got != 4 {
		t.Errorf("the file keeps %d vectors, want 4", got)
	}

	second := &fakeEmbedder{}
	x, r2 := fixture(t, second, &Options{Endpoint: testEndpoint, Dir: dir})
	if err := r2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := second.embedded(); len(got) != 0 {
		t.Errorf("the second ranker asked for %q, kept by the first", got)
	}
	if got, ok := search(t, x, r2, "a picture of the page", nil); !ok || got[0] != "browser__screenshot" {
		t.Errorf("after a restart: %v fused %v, want browser__screenshot first", got, ok)
	}
	if diff := cmp.Diff([]string{"a picture of the page"}, second.embedded()); diff != "" {
		t.Errorf("the second ranker's requests (-want +got):\n%s", diff)
	}

	// Another model, or endpoint, has a file of its own.
	third := &fakeEmbedder{}
	_, r3 := fixture(t, third, &Options{Endpoint: "http://other.example/v1/embeddings", Dir: dir})
	if err := r3.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(third.embedded()); got != 4 {
		t.Errorf("a ranker of another endpoint embedded %d texts, want 4", got)
	}
}

// TestNoDirNoFile: a ranker without Dir writes nothing.
func TestNoDirNoFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	r, _ := keptRanker(t, &fakeEmbedder{}, "")
	r.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a ranker without Dir wrote %v", entries)
	}
}

// TestBadFileIgnored: a file that is corrupt, cut short, too large, of
// other dimensions than it claims, or of another endpoint is ignored, with
// one log line naming it, every tool is embedded again, and the file is
// replaced by a good one.
func TestBadFileIgnored(t *testing.T) {
	good := func(t *testing.T) []byte {
		dir := t.TempDir()
		r, _ := keptRanker(t, &fakeEmbedder{}, dir)
		r.Close()
		data, err := os.ReadFile(filepath.Join(dir, FileName(testEndpoint, "m")))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	resum := func(data []byte) []byte {
		body := data[:len(data)-4]
		return binary.LittleEndian.AppendUint32(slices.Clone(body), crc32.ChecksumIEEE(body))
	}
	for _, tc := range []struct {
		name, why string
		data      func(t *testing.T) []byte
	}{
		{"garbage", "not a vector file", func(*testing.T) []byte { return []byte("not vectors at all, just some text") }},
		{"cut short", "checksum", func(t *testing.T) []byte { d := good(t); return d[:len(d)-9] }},
		{"flipped bit", "checksum", func(t *testing.T) []byte { d := good(t); d[headerBytes+40] ^= 1; return d }},
		{"too large", "MaxFileBytes", func(*testing.T) []byte { return make([]byte, MaxFileBytes+1) }},
		{"other dims", "bytes of vectors for 4 of 5 dimensions", func(t *testing.T) []byte {
			d := good(t)
			binary.LittleEndian.PutUint32(d[40:], 5)
			return resum(d)
		}},
		{"too many", "over MaxStoredVectors", func(t *testing.T) []byte {
			d := good(t)
			binary.LittleEndian.PutUint32(d[44:], MaxStoredVectors+1)
			return resum(d)
		}},
		{"another endpoint's", "not a vector file", func(t *testing.T) []byte { d := good(t); d[8] ^= 1; return d }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName(testEndpoint, "m"))
			if err := os.WriteFile(path, tc.data(t), 0o600); err != nil {
				t.Fatal(err)
			}
			e := &fakeEmbedder{}
			r, logs := keptRanker(t, e, dir)
			r.Close()
			if got := len(e.embedded()); got != 4 {
				t.Errorf("embedded %d texts, want all 4", got)
			}
			var lines []string
			for _, l := range logs.got() {
				if strings.Contains(l, "ignoring the file") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "file="+path) || !strings.Contains(lines[0], tc.why) {
				t.Errorf("want one line naming %s and saying %q; got %q", path, tc.why, lines)
			}
			if got := len(readKept(t, dir)); got != 4 {
				t.Errorf("the replaced file keeps %d vectors, want 4", got)
			}
		})
	}
}

// TestKeptOfOtherDims: a good file whose vectors are of other dimensions
// than the endpoint's now (a model changed behind its name) is dropped at
// the first query, which ranks by BM25F alone; the tools are embedded
// again, the next query fuses, and the file is replaced.
func TestKeptOfOtherDims(t *testing.T) {
	dir := t.TempDir()
	r0 := New(&fakeEmbedder{}, "m", &Options{Endpoint: testEndpoint, Dir: dir})
	var list []stored
	for _, docs := range tools {
		for _, d := range docs {
			list = append(list, stored{key: r0.key(Text(d.Name, d.Title, d.Description)), vec: []float32{1, 0, 0}})
		}
	}
	r0.Close()
	if err := os.WriteFile(r0.path(), encodeVectors(list, identity(testEndpoint, "m"), 3), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &fakeEmbedder{}
	x, r := fixture(t, e, &Options{Endpoint: testEndpoint, Dir: dir})
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.embedded(); len(got) != 0 {
		t.Fatalf("asked for %q, all kept", got)
	}
	if _, ok := search(t, x, r, "a picture of the page", nil); ok {
		t.Error("fused 4 dimensions with 3")
	}
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, ok := search(t, x, r, "a picture of the page", nil); !ok || got[0] != "browser__screenshot" {
		t.Errorf("once embedded again: %v fused %v, want browser__screenshot first", got, ok)
	}
	r.Close()
	kept := readKept(t, dir)
	if len(kept) != 4 || len(kept[0].vec) != 4 {
		t.Errorf("the replaced file keeps %d vectors of %d dimensions, want 4 of 4", len(kept), len(kept[0].vec))
	}
}

// TestEncodeBounded: a file keeps at most MaxStoredVectors, the most
// recently used, and within MaxFileBytes however many dimensions.
func TestEncodeBounded(t *testing.T) {
	list := make([]stored, MaxStoredVectors+2)
	for i := range list {
		binary.LittleEndian.PutUint32(list[i].key[:], uint32(i))
		list[i].vec, list[i].used = []float32{1}, uint64(i)
	}
	id := identity(testEndpoint, "m")
	got, err := decodeVectors(encodeVectors(list, id, 1), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxStoredVectors || binary.LittleEndian.Uint32(got[0].key[:]) != MaxStoredVectors+1 ||
		binary.LittleEndian.Uint32(got[len(got)-1].key[:]) != 2 {
		t.Errorf("kept %d, from key %d to %d; want %d, the most recently used (%d down to 2)", len(got),
			binary.LittleEndian.Uint32(got[0].key[:]), binary.LittleEndian.Uint32(got[len(got)-1].key[:]), MaxStoredVectors, MaxStoredVectors+1)
	}
	big := []stored{{vec: make([]float32, maxDims)}, {vec: make([]float32, maxDims)}}
	for i := range 2000 {
		big = append(big, stored{vec: big[0].vec, used: uint64(i)})
	}
	if data := encodeVectors(big, id, maxDims); len(data) > MaxFileBytes {
		t.Errorf("a file of %d bytes, over MaxFileBytes", len(data))
	}
}

// BenchmarkReadKept5000 reads a file of 5,000 vectors of 768 dimensions
// (nomic-embed-text's), as a start of a gateway of 5,000 tools does.
func BenchmarkReadKept5000(b *testing.B) {
	list := make([]stored, 5000)
	for i := range list {
		binary.LittleEndian.PutUint32(list[i].key[:], uint32(i))
		list[i].vec = make([]float32, 768)
		list[i].vec[i%768] = 1
	}
	id := identity(testEndpoint, "m")
	path := filepath.Join(b.TempDir(), "v")
	data := encodeVectors(list, id, 768)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := readVectors(path, id); err != nil {
			b.Fatal(err)
		}
	}
}
