package upstream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShortStderr: a log line shows the last lines of a server's stderr
// that its error carries, and says that there were more.
func TestShortStderr(t *testing.T) {
	tail := newTail(stderrTailLines)
	for n := range 8 {
		tail.add(fmt.Sprintf("line %d", n+1))
	}
	long := fmt.Sprintf("server %q: session: process exited with status 1%s%s", "s", stderrMark, tail)
	for _, tc := range []struct {
		msg  string
		n    int
		want string
	}{
		{long, 3, `server "s": session: process exited with status 1; stderr: … | line 6 | line 7 | line 8`},
		{long, 8, long},
		{long, 20, long},
		{`server "s": connect: command "x" not found`, 3, `server "s": connect: command "x" not found`},
	} {
		if got := ShortStderr(tc.msg, tc.n); got != tc.want {
			t.Errorf("ShortStderr(%q, %d) =\n%q\nwant\n%q", tc.msg, tc.n, got, tc.want)
		}
	}
}

// TestTailReadsLinesCut: the tail of a child's stderr holds each line cut
// at maxTailLine bytes, however long the line, and a line that holds the
// separator of two lines is still one line for ShortStderr.
func TestTailReadsLinesCut(t *testing.T) {
	huge := strings.Repeat("x", 10<<20)
	tail := newTail(stderrTailLines)
	tail.readFrom(strings.NewReader("first | with a pipe\n" + huge + "\nlast\r\n"))
	want := []string{"first ¦ with a pipe", huge[:maxTailLine] + "…", "last"}
	if diff := cmp.Diff(want, tail.lines); diff != "" {
		t.Errorf("lines kept (-want +got):\n%s", diff)
	}
	msg := `server "s": session: process exited` + stderrMark + tail.String()
	if got, want := ShortStderr(msg, 1), `server "s": session: process exited; stderr: … | last`; got != want {
		t.Errorf("ShortStderr = %q, want %q", got, want)
	}
	if got := testing.AllocsPerRun(1, func() { newTail(1).readFrom(strings.NewReader(huge)) }); got > 20 {
		t.Errorf("reading a line of 10 MiB took %v allocations, want it read in pieces", got)
	}
}
