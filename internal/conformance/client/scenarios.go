package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// clientInfo is how the program introduces itself; the initialize scenario
// checks that it does.
var clientInfo = &mcp.Implementation{Name: "switchboard-conformance-client", Version: "dev"}

// A runner holds what every scenario of one run shares.
type runner struct {
	logger *slog.Logger
	// oauth, if set, are the upstream's login options, and client the
	// server's "oauth" config.
	oauth  *oauth.Options
	client *config.OAuth
}

// session connects an upstream to the server at url, waits for its first
// lists, and runs f with it. It closes the upstream however f ends, and
// joins the errors of both.
func (r *runner) session(ctx context.Context, url string, f func(*upstream.Upstream) error) (err error) {
	u := upstream.New(config.Server{Name: "conformance", Type: config.HTTP, URL: url, OAuth: r.client}, &upstream.Options{
		Client: clientInfo,
		Logger: r.logger,
		OAuth:  r.oauth,
	})
	defer func() {
		if cerr := u.Close(time.Time{}); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close: %w", cerr))
		}
	}()
	if err := u.Connect(ctx); err != nil {
		return err
	}
	// Connect returns with the session up; its first lists may still be
	// on their way.
	u.Settle(ctx, 0)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting for the first lists: %w", err)
	}
	return f(u)
}

// call calls the tool name, which the server must list, with args, and
// fails on an error result.
func call(ctx context.Context, u *upstream.Upstream, name string, args map[string]any) (*mcp.CallToolResult, error) {
	if !slices.ContainsFunc(u.Snapshot().Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
		return nil, fmt.Errorf("the server does not list tool %q", name)
	}
	res, err := u.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, fmt.Errorf("tool %q returned an error: %s", name, mcptest.Text(res))
	}
	return res, nil
}

// runInitialize connects, which initializes a session with a protocol
// version the suite knows and our clientInfo, and lists the tools.
func runInitialize(ctx context.Context, r *runner, url string, _ map[string]any) error {
	return r.session(ctx, url, func(*upstream.Upstream) error { return nil })
}

// runToolsCall calls add_numbers with 5 and 3; the mock checks the sum it
// computed.
func runToolsCall(ctx context.Context, r *runner, url string, _ map[string]any) error {
	return r.session(ctx, url, func(u *upstream.Upstream) error {
		_, err := call(ctx, u, "add_numbers", map[string]any{"a": 5, "b": 3})
		return err
	})
}

// runElicitationDefaults calls a tool whose server asks for a form, and
// accepts it with the defaults of the requested schema (SEP-1034). The
// upstream forwards what a server asks while serving a request to the peer
// the request was made for: here, a peer that plays the user.
func runElicitationDefaults(ctx context.Context, r *runner, url string, _ map[string]any) error {
	return r.session(ctx, url, func(u *upstream.Upstream) error {
		p := &acceptDefaults{logger: r.logger}
		if _, err := call(upstream.WithPeer(ctx, p), u, "test_client_elicitation_defaults", map[string]any{}); err != nil {
			return err
		}
		if p.count() == 0 {
			return errors.New("the server asked for no elicitation")
		}
		return nil
	})
}

// The login of the auth scenarios: the suite's authorization server
// approves at once, and redirects to a callback nobody listens on, whose
// URL it only checks; it accepts a client ID metadata document at this URL.
const (
	authRedirectURL   = "http://localhost:3000/callback"
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"
)

// runAuth logs in as `switchboard login` does, with the suite's
// authorization server instead of a browser: the upstream's login options
// run go-sdk's flow (discovery, registration, PKCE, scopes, step-up) and
// keep the token in a store of their own, and the scenario then lists the
// tools and calls test-tool. The pre-registered client of some scenarios,
// in the context, is the server's "oauth" config.
func runAuth(ctx context.Context, r *runner, url string, env map[string]any) error {
	dir, err := os.MkdirTemp("", "switchboard-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r.oauth = &oauth.Options{Store: &oauth.Store{Dir: dir}, Login: mcptest.Headless, RedirectURL: authRedirectURL, ClientMetadataURL: clientMetadataURL}
	if id, ok := env["client_id"].(string); ok {
		secret, _ := env["client_secret"].(string)
		r.client = &config.OAuth{ClientID: id, ClientSecret: secret}
	}
	return r.session(ctx, url, func(u *upstream.Upstream) error {
		_, err := call(ctx, u, "test-tool", map[string]any{})
		return err
	})
}

// runSSERetry calls a tool whose server closes the response stream before
// it answers; the streamable transport must resume it with a GET that
// carries Last-Event-ID, after the server's retry delay, and get the
// answer there.
func runSSERetry(ctx context.Context, r *runner, url string, _ map[string]any) error {
	return r.session(ctx, url, func(u *upstream.Upstream) error {
		_, err := call(ctx, u, "test_reconnection", map[string]any{})
		return err
	})
}
