package switchboard

import (
	"errors"
	"testing"
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
