package switchboard

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An Observer hears of the calls the manager routes, for metrics and
// logs. (Changes — of state, lists, connections — are heard through
// [Manager.Subscribe].) Both fields are optional. An unset Observer, or an
// unset field, costs nothing: the call path allocates nothing for it.
//
// The hooks run on the caller's goroutine, around the call: neither may
// block for long.
type Observer struct {
	// CallStarted is called when a call has been routed to its server,
	// before anything is sent. tool is the public name.
	CallStarted func(server, tool string)
	// CallEnded is called when a call that CallStarted saw returns.
	CallEnded func(CallEnd)
}

// CallEnd describes a call that returned.
type CallEnd struct {
	Server   string
	Tool     string // the public name
	Outcome  CallOutcome
	Duration time.Duration
	Err      error // nil unless the call failed
}

// CallOutcome sorts the ends of calls, for metrics.
type CallOutcome int

// The outcomes of a call.
const (
	OutcomeOK               CallOutcome = iota // a result
	OutcomeToolError                           // a result with isError set
	OutcomeError                               // any other failure, such as a protocol error from the server
	OutcomeUnavailable                         // the server was not connected, reconnecting, in crash-loop or closed
	OutcomeTimeout                             // the server did not answer within its timeout
	OutcomeCancelled                           // the caller gave up
	OutcomeAmbiguous                           // it may have run, and was not replayed
	OutcomeInvalidArguments                    // rejected before anything was sent
)

var outcomeNames = [...]string{
	OutcomeOK:               "ok",
	OutcomeToolError:        "tool_error",
	OutcomeError:            "error",
	OutcomeUnavailable:      "unavailable",
	OutcomeTimeout:          "timeout",
	OutcomeCancelled:        "cancelled",
	OutcomeAmbiguous:        "ambiguous",
	OutcomeInvalidArguments: "invalid_arguments",
}

// String returns the outcome's name, as a metric label.
func (o CallOutcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// outcomeOf sorts the end of a call made with ctx.
func outcomeOf(ctx context.Context, res *mcp.CallToolResult, err error) CallOutcome {
	switch {
	case err == nil && res != nil && res.IsError:
		return OutcomeToolError
	case err == nil:
		return OutcomeOK
	case ctx.Err() != nil:
		return OutcomeCancelled
	case errors.Is(err, ErrAmbiguous):
		return OutcomeAmbiguous
	case errors.Is(err, ErrTimeout):
		return OutcomeTimeout
	case errors.Is(err, ErrInvalidArguments):
		return OutcomeInvalidArguments
	case errors.Is(err, ErrNotConnected), errors.Is(err, ErrReconnecting), errors.Is(err, ErrCircuitOpen), errors.Is(err, ErrClosed):
		return OutcomeUnavailable
	}
	return OutcomeError
}
