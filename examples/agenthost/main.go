// Command agenthost is a small agent host built on the switchboard library.
// An agent's model would choose the calls; here you do, one line at a time:
//
//	tools                 list the tools, as a model would see them
//	call NAME [JSON]      call a tool with JSON object arguments
//	status                show each server's state
//	quit                  close every server and exit
//
// Every event (a server connecting, failing or changing its tools) is
// printed as it happens. Tools named note_delete need your approval first.
//
// Run it on your own config, or on the embedded default (which needs the
// switchboard command on PATH):
//
//	go run ./examples/agenthost -config mcp.json
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agenthost:", err)
		os.Exit(1)
	}
}

type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func run(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	var files paths
	fs := flag.NewFlagSet("agenthost", flag.ContinueOnError)
	fs.Var(&files, "config", "config `file` (repeatable); default: discovery, then the embedded default")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(&config.LoadOptions{Paths: files})
	if err != nil {
		return err
	}
	for _, r := range cfg.Rejected {
		fmt.Fprintf(out, "skipped: %v\n", r.Err)
	}
	approval, err := switchboard.NewApprovalPolicy(map[string]any{
		"always": map[string]any{"tool_names": []any{"note_delete"}},
	})
	if err != nil {
		return err
	}
	m := switchboard.New(cfg, &switchboard.Options{
		Client:      &mcp.Implementation{Name: "agenthost", Version: "v1"},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Approval:    approval,
		FormatError: switchboard.DefaultErrorFormatter, // the model reads errors as tool output
	})
	defer m.Close()

	// Events come from another goroutine: one lock keeps lines whole.
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	m.Subscribe(func(ev switchboard.Event) {
		switch ev.Kind {
		case switchboard.EventState:
			if ev.Err != nil {
				say("event: %s is %s: %v", ev.Server, ev.State, ev.Err)
			} else {
				say("event: %s is %s", ev.Server, ev.State)
			}
		case switchboard.EventChanged:
			if len(ev.Tools.Added)+len(ev.Tools.Removed) > 0 {
				say("event: tools added %v, removed %v", ev.Tools.Added, ev.Tools.Removed)
			}
		case switchboard.EventReloadFailed:
			say("event: %s could not reload its %s: %v", ev.Server, ev.List, ev.Err)
		}
	})
	if err := m.Connect(ctx); err != nil {
		return err
	}

	query := &switchboard.Query{Client: "agenthost"}
	lines := bufio.NewScanner(in)
	for {
		if !lines.Scan() {
			return lines.Err()
		}
		verb, rest, _ := strings.Cut(strings.TrimSpace(lines.Text()), " ")
		switch verb {
		case "":
		case "tools":
			for _, t := range m.Tools(ctx, query) {
				say("%s: %s", t.Name, t.Description)
			}
		case "status":
			for _, s := range m.Status() {
				say("%s: %s, %d tools", s.Name, s.State, s.Tools)
			}
		case "call":
			name, raw, _ := strings.Cut(strings.TrimSpace(rest), " ")
			var arguments map[string]any
			if raw != "" {
				if err := json.Unmarshal([]byte(raw), &arguments); err != nil {
					say("arguments must be a JSON object: %v", err)
					continue
				}
			}
			// An unknown tool needs no approval: the call only says it is unknown.
			if t, known := m.Lookup(name); known && t.RequiresApproval(ctx, query) {
				say("%s needs your approval: run it? [y/N]", name)
				if !lines.Scan() || strings.TrimSpace(lines.Text()) != "y" {
					say("not run")
					continue
				}
			}
			res, err := m.CallTool(ctx, query, &mcp.CallToolParams{Name: name, Arguments: arguments})
			if err != nil {
				return err // only cancellation is left unformatted
			}
			for _, c := range res.Content {
				if text, ok := c.(*mcp.TextContent); ok {
					say("%s", text.Text)
				}
			}
		case "quit":
			return nil
		default:
			say("unknown command %q: try tools, call, status or quit", verb)
		}
	}
}
