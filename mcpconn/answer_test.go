package mcpconn

import (
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestAnswer: only the JSON-RPC error a server answered a request with
// counts as its answer; one carried by the cause of an unavailable server,
// or the SDK's own rejection of a write, does not.
func TestAnswer(t *testing.T) {
	invalid := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}
	rejected := &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the server's answer", &ServerError{Server: "s", Op: "call", Err: invalid}, true},
		{"a rejected write", &ServerError{Server: "s", Op: "call", Err: rejected}, false},
		{"an unavailable server whose last attempt failed with one", &ServerError{Server: "s", Op: "call",
			Err: &UnavailableError{State: StateReconnecting, Err: invalid}}, false},
		{"an ambiguous call", &AmbiguousError{Tool: "t", Err: invalid}, false},
		{"a timed-out call", &ServerError{Server: "s", Op: "call", Err: errors.Join(ErrTimeout, invalid)}, false},
		{"no JSON-RPC error", errors.New("plain"), false},
	} {
		if _, got := Answer(tc.err); got != tc.want {
			t.Errorf("%s: Answer = %v, want %v", tc.name, got, tc.want)
		}
	}
}
