//lint:file-ignore SA1019 A conformance client answers what the suite's servers ask, sampling and logging included, as the upstream package forwards them.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// acceptDefaults is the [upstream.Peer] of a scenario's requests: the user
// on whose behalf they are made. It accepts every form elicitation with the
// defaults of the requested schema, refuses sampling, and logs what the
// server logs. It is safe for concurrent use.
type acceptDefaults struct {
	logger  *slog.Logger
	elicits atomic.Int64 // the elicitations answered
}

var _ upstream.Peer = (*acceptDefaults)(nil)

// count returns how many elicitations it answered.
func (p *acceptDefaults) count() int64 { return p.elicits.Load() }

// Session identifies the peer: one run is one client.
func (p *acceptDefaults) Session() any { return p }

// Done returns nil: the peer lasts as long as the program.
func (p *acceptDefaults) Done() <-chan struct{} { return nil }

// Elicit accepts a form with its defaults filled in. It declines a URL
// elicitation, which needs a browser.
func (p *acceptDefaults) Elicit(_ context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	p.elicits.Add(1)
	if params.Mode == "url" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	content, err := defaults(params.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("elicitation: %w", err)
	}
	p.logger.Info("accepting an elicitation with its defaults", "message", params.Message, "content", content)
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// defaults returns the default of each top-level property of schema, a
// JSON schema in whatever form the transport decoded it to. A property
// without a default is left out: the user would fill it in.
func defaults(schema any) (map[string]any, error) {
	content := map[string]any{}
	if schema == nil {
		return content, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	for name, prop := range s.Properties {
		if prop.Default == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(prop.Default, &v); err != nil {
			return nil, fmt.Errorf("default of %q: %w", name, err)
		}
		content[name] = v
	}
	return content, nil
}

// errNoSampling answers a server that asks for sampling: no model here.
var errNoSampling = errors.New("the conformance client has no model to sample")

// CreateMessage refuses: no scenario samples.
func (p *acceptDefaults) CreateMessage(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, errNoSampling
}

// NotifyElicitationComplete does nothing: it only accepts forms.
func (p *acceptDefaults) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return nil
}

// Log writes the server's log message to the program's log.
func (p *acceptDefaults) Log(ctx context.Context, params *mcp.LoggingMessageParams) error {
	p.logger.InfoContext(ctx, "server log", "level", params.Level, "logger", params.Logger, "data", params.Data)
	return nil
}

// NotifyProgress ignores progress.
func (p *acceptDefaults) NotifyProgress(context.Context, *mcp.ProgressNotificationParams) error {
	return nil
}

// ListRoots offers no roots.
func (p *acceptDefaults) ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{}, nil
}
