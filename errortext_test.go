package switchboard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestErrorTextShowsNoAddress: a status error shows no URL, no network
// address and no looked-up host name.
func TestErrorTextShowsNoAddress(t *testing.T) {
	for in, want := range map[string]string{
		`server "r": connect: sending "initialize": Post "http://10.0.0.7:8080/mcp": dial tcp 10.0.0.7:8080: connect: connection refused`: `server "r": connect: sending "initialize": Post "<url>": dial tcp <address>: connect: connection refused`,
		`Post "https://mcp.internal.example/mcp": dial tcp: lookup mcp.internal.example on 10.0.0.2:53: no such host`:                     `Post "<url>": dial tcp: lookup <host>: no such host`,
		`read tcp [::1]:5555->[::1]:443: read: connection reset by peer`:                                                                  `read tcp <address>: read: connection reset by peer`,
		`server "s": process exited: exit status 1`:                                                                                       `server "s": process exited: exit status 1`,
	} {
		if got := (ServerStatus{Err: errors.New(in)}).ErrorText(); got != want {
			t.Errorf("ErrorText of\n  %s\n= %s\nwant\n  %s", in, got, want)
		}
	}
	if got := (ServerStatus{}).ErrorText(); got != "" {
		t.Errorf("ErrorText without an error = %q", got)
	}
}

func TestErrorFormatter(t *testing.T) {
	f := newFleet(t)
	f.add("s", mcptest.Script{})
	f.add("down", mcptest.Script{Tools: tools("t")})
	m := f.managerWith(&Options{FormatError: DefaultErrorFormatter}, server("s"), server("down"))
	reconnecting := mcptest.Await(m.Subscribe, func(ev Event) bool {
		return ev.Kind == EventState && ev.Server == "down" && ev.State == StateReconnecting
	})
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.fail("down", errors.New("refused"))
	f.servers["down"].Restart()
	<-reconnecting // else the call may go out on the dying session, and be ambiguous
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"s__add", map[string]any{"a": 1}, "were invalid"},
		{"s__nope", nil, "There is no tool named s__nope. Use one of the tools listed."},
		{"echo", nil, `There is no tool named echo; did you mean "s__echo"?`},
		{"down__t", nil, "Do not retry this tool"},
	} {
		res, err := callTool(t.Context(), m, tc.tool, tc.args)
		if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), tc.want) {
			t.Errorf("%s = %v, %v; want an error result saying %q", tc.tool, mcptest.Text(res), err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := callTool(ctx, m, "s__echo", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call = %v, want the cancellation, not a result", err)
	}
}
