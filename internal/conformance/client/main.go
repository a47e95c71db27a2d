// Command client is the client side of the official MCP conformance suite,
// run through Switchboard's own upstream package: every scenario connects,
// lists and calls with an [upstream.Upstream], as the gateway does, with
// its schedule of reconnects and its session handling, not with a bare
// go-sdk client.
//
// The suite runs it once per scenario, in client mode:
//
//	conformance client --command "client" --suite core
//
// with the mock server's URL as the last argument and the scenario's name
// in MCP_CONFORMANCE_SCENARIO; some scenarios add JSON in
// MCP_CONFORMANCE_CONTEXT. It exits 0 when the scenario ran to its end,
// saying so on stdout; the suite judges the rest from what the mock saw.
//
// Each scenario is a function in the scenarios table, found by name; every
// authorization scenario (auth/...) is one, runAuth, which logs in with
// the project's own login options (internal/oauth) and calls a tool.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// scenarioTimeout bounds one scenario. The suite gives a client 30 s by
// default; a client that hangs should say so before the suite kills it.
const scenarioTimeout = 25 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err := run(ctx, os.Args[1:], os.Getenv, logger)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
	fmt.Println(doneLine)
}

// doneLine is what the program prints to stdout when its scenario ran to
// its end, just before it exits 0. The suite records each run's output,
// and the interop test looks for it there: the suite's summary does not
// say how a client exited.
const doneLine = "conformance client: done"

// A scenario runs against the mock server at url. env is the suite's
// MCP_CONFORMANCE_CONTEXT, decoded; nil if it sent none.
type scenario func(ctx context.Context, r *runner, url string, env map[string]any) error

// scenarios are the suite's client scenarios this program runs, by name.
var scenarios = map[string]scenario{
	"initialize":                          runInitialize,
	"tools_call":                          runToolsCall,
	"elicitation-sep1034-client-defaults": runElicitationDefaults,
	"sse-retry":                           runSSERetry,
}

// run runs the scenario that getenv names against the URL that ends args.
func run(ctx context.Context, args []string, getenv func(string) string, logger *slog.Logger) error {
	if len(args) == 0 {
		return errors.New("usage: client [flags...] SERVER-URL (the suite passes the URL last)")
	}
	url := args[len(args)-1]
	name := getenv("MCP_CONFORMANCE_SCENARIO")
	if name == "" {
		return fmt.Errorf("MCP_CONFORMANCE_SCENARIO is not set; scenarios: %s", known())
	}
	sc, ok := scenarios[name]
	if !ok && strings.HasPrefix(name, "auth/") {
		sc, ok = runAuth, true
	}
	if !ok {
		return fmt.Errorf("scenario %q is not supported; scenarios: %s", name, known())
	}
	env, err := decodeContext(getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	r := &runner{logger: logger.With("scenario", name)}
	if err := sc(ctx, r, url, env); err != nil {
		return fmt.Errorf("scenario %s: %w", name, err)
	}
	return nil
}

// known lists the scenarios, sorted, for usage messages.
func known() string {
	names := make([]string, 0, len(scenarios))
	for name := range scenarios {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ") + " and every auth/ scenario"
}

// decodeContext decodes MCP_CONFORMANCE_CONTEXT, a JSON object; "" is nil.
func decodeContext(raw string) (map[string]any, error) {
	if raw == "" {
		return nil, nil
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	return env, nil
}
