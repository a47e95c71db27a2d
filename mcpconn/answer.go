package mcpconn

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// codeRejected is the go-sdk's JSON-RPC code for a message its transport
// could not send (jsonrpc2.ErrRejected, which is internal): never a
// server's answer.
const codeRejected = -32005

// Answer returns the JSON-RPC error that the server answered a request
// with, if that is what err is: a gateway passes it on to its client as it
// is. A request that found its server down, that may have run, or that
// timed out was not answered, whatever JSON-RPC error its cause carries.
func Answer(err error) (*jsonrpc.Error, bool) {
	switch {
	case errors.Is(err, ErrNotConnected), errors.Is(err, ErrReconnecting),
		errors.Is(err, ErrCircuitOpen), errors.Is(err, ErrClosed),
		errors.Is(err, ErrAmbiguous), errors.Is(err, ErrTimeout):
		return nil, false
	}
	if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); ok && rpcErr.Code != codeRejected {
		return rpcErr, true
	}
	return nil, false
}
