package mcpconn_test

import (
	"errors"
	"fmt"

	"github.com/switchboard-mcp/switchboard/mcpconn"
)

// A host tells a server that is coming back from one that is gone by the
// sentinel the error wraps, and finds the server and its state in it.
func ExampleUnavailableError() {
	err := error(&mcpconn.ServerError{
		Server: "web",
		Op:     `call tool "search"`,
		Err:    &mcpconn.UnavailableError{State: mcpconn.StateReconnecting, Err: errors.New("EOF")},
	})

	var down *mcpconn.UnavailableError
	if errors.As(err, &down) && errors.Is(err, mcpconn.ErrReconnecting) {
		fmt.Println("try again soon; the server is", down.State)
	}
	fmt.Println(err)
	// Output:
	// try again soon; the server is reconnecting
	// server "web": call tool "search": reconnecting; last error: EOF
}
