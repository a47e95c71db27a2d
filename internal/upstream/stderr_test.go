package upstream

import (
	"fmt"
	"testing"
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
