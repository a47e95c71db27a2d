package upstream

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// chunked reads data n bytes at a time, as a pipe hands over what a server
// wrote in pieces.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[n:]
	return n, nil
}

func (c *chunked) Close() error { return nil }

// filtered is what a stdoutFilter makes of a server's output.
type filtered struct {
	out     string
	skipped []string
	notes   uint64
}

// filter runs out through a stdoutFilter, read in chunks of n bytes and
// consumed by reads of m bytes.
func filter(t *testing.T, out string, n, m int) filtered {
	t.Helper()
	var got filtered
	var notes noteCount
	f := newStdoutFilter(&chunked{data: []byte(out), n: n}, &notes, func(line []byte) {
		if len(line) > 100 {
			line = append(line[:100:100], "..."...)
		}
		got.skipped = append(got.skipped, string(line))
	})
	var buf bytes.Buffer
	p := make([]byte, m)
	for {
		k, err := f.Read(p)
		buf.Write(p[:k])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got.out, got.notes = buf.String(), notes.seen
	return got
}

const (
	call     = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`
	result   = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
	reversed = `{"result":{"content":[]},"jsonrpc":"2.0","id":2}` // as the TypeScript SDK writes keys
	logNote  = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`
)

// TestStdoutFilter: the lines that are JSON-RPC messages pass, each with
// its newline and without the whitespace around it; the others are
// skipped and told, but for blank lines, which are skipped silently. Lines
// past judgeLimit pass as they are if they start like JSON. The result is
// the same however the reads split the stream.
func TestStdoutFilter(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":3,"result":{"text":"` + strings.Repeat("x", judgeLimit) + `"}}`
	longGarbage := strings.Repeat("g", judgeLimit+1)
	for _, tt := range []struct {
		name string
		in   string
		want filtered
	}{
		{"messages", call + "\n" + result + "\n", filtered{out: call + "\n" + result + "\n"}},
		{"banner", "Server listening on stdio\n" + result + "\n",
			filtered{out: result + "\n", skipped: []string{"Server listening on stdio"}}},
		{"stray line between responses", result + "\nprint('debug')\n" + reversed + "\n",
			filtered{out: result + "\n" + reversed + "\n", skipped: []string{"print('debug')"}}},
		{"crlf", result + "\r\n" + reversed + "\r\n", filtered{out: result + "\n" + reversed + "\n"}},
		{"spaces around", "  " + result + " \t\n", filtered{out: result + "\n"}},
		{"blank lines", "\n\r\n  \n" + result + "\n\n", filtered{out: result + "\n"}},
		{"a logger's JSON line", `{"level":30,"time":1,"msg":"started"}` + "\n" + result + "\n",
			filtered{out: result + "\n", skipped: []string{`{"level":30,"time":1,"msg":"started"}`}}},
		{"not a JSON-RPC version", `{"jsonrpc":"1.0","id":1,"result":{}}` + "\n",
			filtered{skipped: []string{`{"jsonrpc":"1.0","id":1,"result":{}}`}}},
		{"a response without an id", `{"jsonrpc":"2.0","result":{}}` + "\n",
			filtered{skipped: []string{`{"jsonrpc":"2.0","result":{}}`}}},
		{"a message and more", result + " trailing\n" + result + result + "\n",
			filtered{skipped: []string{result + " trailing", result + result}}},
		{"not JSON", "{not json\n[1,\n", filtered{skipped: []string{"{not json", "[1,"}}},
		{"other JSON values", "42\n\"text\"\nnull\ntrue\n", filtered{skipped: []string{"42", `"text"`, "null", "true"}}},
		{"batch", "[" + result + "," + logNote + "]\n", filtered{out: "[" + result + "," + logNote + "]\n", notes: 1}},
		{"bad batches", "[]\n[" + result + ",1]\n", filtered{skipped: []string{"[]", "[" + result + ",1]"}}},
		{"notes counted", logNote + "\n" + result + "\nnotifications/message\n",
			filtered{out: logNote + "\n" + result + "\n", notes: 1, skipped: []string{"notifications/message"}}},
		{"last line without a newline", "banner\n" + result, filtered{out: result, skipped: []string{"banner"}}},
		{"last garbage without a newline", result + "\nbye", filtered{out: result + "\n", skipped: []string{"bye"}}},
		{"long message", "banner\n" + long + "\n" + result + "\n",
			filtered{out: long + "\n" + result + "\n", skipped: []string{"banner"}}},
		{"long line unjudged", "{" + longGarbage + "\n", filtered{out: "{" + longGarbage + "\n"}},
		{"long garbage", longGarbage + "\n" + result + "\n", filtered{out: result + "\n", skipped: []string{longGarbage[:100] + "..."}}},
		{"garbage at the limit", longGarbage[:judgeLimit] + "\n" + result + "\n",
			filtered{out: result + "\n", skipped: []string{longGarbage[:100] + "..."}}},
		{"message at the limit", pad(result, judgeLimit) + "\n", filtered{out: result + "\n"}},
		{"pretty-printed message", pretty + "\n" + result + "\n", filtered{out: pretty + "\n" + result + "\n"}},
		{"pretty-printed with crlf", strings.ReplaceAll(pretty, "\n", "\r\n") + "\r\n",
			filtered{out: strings.ReplaceAll(pretty, "\n", "\r\n") + "\n"}},
		{"pretty-printed, not a message", "{\n  \"level\": 30\n}\n" + result + "\n",
			filtered{out: result + "\n", skipped: []string{"{", `"level": 30`, "}"}}},
		{"the start of a value, then a message", "[\nnot json\n" + result + "\n",
			filtered{out: result + "\n", skipped: []string{"[", "not json"}}},
		{"pretty-printed at the end, without a newline", "banner\n" + pretty, filtered{out: pretty, skipped: []string{"banner"}}},
		{"the start of a value past the limit", "{\n" + strings.Repeat("  \"k\": 1,\n", judgeLimit/10) + result + "\n",
			filtered{out: result + "\n", skipped: append([]string{"{"}, slices.Repeat([]string{`"k": 1,`}, judgeLimit/10)...)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range []int{1, 7, 4096, len(tt.in) + 1} {
				for _, m := range []int{1, 512, 1 << 20} {
					got := filter(t, tt.in, n, m)
					if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(filtered{})); diff != "" {
						t.Errorf("reads of %d, consumed by %d (-want +got):\n%s", n, m, diff)
					}
				}
			}
		})
	}
}

// pretty is a message as a pretty-printer writes it, over several lines.
const pretty = `{
  "jsonrpc": "2.0",
  "id": 4,
  "result": {
    "content": [{"type": "text", "text": "a } in a string, and a \" too"}]
  }
}`

// pad surrounds msg with spaces up to n bytes.
func pad(msg string, n int) string {
	half := (n - len(msg)) / 2
	return strings.Repeat(" ", half) + msg + strings.Repeat(" ", n-len(msg)-half)
}

// TestStdoutFilterKeepsNoLargeBuffer: the buffer a line that several
// reads brought needed is dropped once it is spent.
func TestStdoutFilterKeepsNoLargeBuffer(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":3,"result":{"text":"` + strings.Repeat("x", 10<<20) + `"}}`
	mid := pad(result, judgeLimit/2)
	in := long + "\n" + mid + "\n" + strings.Repeat("g", 1<<20) + "\n" + result + "\n"
	var notes noteCount
	f := newStdoutFilter(io.NopCloser(iotest.HalfReader(strings.NewReader(in))), &notes, func([]byte) {})
	p := make([]byte, 8<<10)
	var out bytes.Buffer
	for {
		n, err := f.Read(p)
		out.Write(p[:n])
		if err != nil {
			break
		}
		if cap(f.buf) > 2*judgeLimit {
			t.Fatalf("filter buffer of %d bytes", cap(f.buf))
		}
	}
	if want := long + "\n" + result + "\n" + result + "\n"; out.String() != want {
		t.Errorf("output of %d bytes, want %d", out.Len(), len(want))
	}
	if cap(f.buf) > keptBuffer {
		t.Errorf("filter keeps a buffer of %d bytes at the end, want at most %d", cap(f.buf), keptBuffer)
	}
}

// TestStdoutFilterExplains: a handshake that found no answer says what the
// filter skipped, or the line it held for want of a newline: a server that
// writes its messages otherwise than as lines of their own.
func TestStdoutFilterExplains(t *testing.T) {
	errTimeout := errors.New("timed out")
	for _, tt := range []struct {
		name, out, want string
	}{
		{"nothing", "", "timed out"},
		{"a message", result + "\n", "timed out"},
		{"a skipped line", "banner\n", "timed out (the server wrote a line on stdout that is not a JSON-RPC message, skipped: a message must be a line of its own)"},
		{"skipped lines", "banner\n{\n\"x\": 1\n}\n", "timed out (the server wrote 4 lines on stdout that are not JSON-RPC messages, skipped: a message must be a line of its own)"},
		{"no newline", result, "timed out (the server wrote 48 bytes on stdout that no newline ended: a message must end with one)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newStdoutFilter(&chunked{data: []byte(tt.out), n: 4096}, &noteCount{}, func([]byte) {})
			p := make([]byte, 4096)
			for {
				if _, err := f.Read(p); err != nil {
					break
				}
			}
			err := f.withHint(errTimeout)
			if got := err.Error(); got != tt.want {
				t.Errorf("explain = %q, want %q", got, tt.want)
			}
			if !errors.Is(err, errTimeout) {
				t.Errorf("explain(err) does not wrap err")
			}
		})
	}
}
