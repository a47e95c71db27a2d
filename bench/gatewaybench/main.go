// Command gatewaybench measures gateways side by side, whole processes on
// one machine: the go-sdk echo upstream served directly (the baseline),
// switchboard serve over an HTTP and over a stdio upstream, the minimal
// go-sdk proxy (the limit for a gateway's own code), and TBXark/mcp-proxy
// (the peer), in interleaved rounds. Every figure is reported as a ratio to
// the same run's baseline.
//
// Usage:
//
//	go run ./bench/gatewaybench [-rounds 3] [-duration 4s] [-sessions 32] [-tbxark PATH] [-compare BINARY] [-only REGEXP] [-smoke]
//	go run ./bench/gatewaybench -big BYTES [-rounds 3] [-compare BINARY] [-only REGEXP]
//	gatewaybench upstream (--listen HOST:PORT | --stdio)
//	gatewaybench proxy --listen HOST:PORT (--upstream URL | --upstream-stdio)
//	gatewaybench load --endpoint URL [--tool echo] [--sessions 32] [--duration 10s] [--rate N]
//
// Each setup's processes start fresh for each round. Its sessions call a
// 1 KiB echo tool back to back (closed loop), and every reply is checked;
// then at a fixed rate, half the calibrated peak of switchboard over HTTP,
// for tail latency under ordinary load. -smoke is one short round that
// checks every setup answered correctly, and times nothing. -big measures
// memory instead: each gateway forwards one result of BYTES bytes (the
// upstream's big tool), and its resident memory is read before, at its
// peak and after.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaybench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "upstream":
			fs := flag.NewFlagSet("upstream", flag.ExitOnError)
			listen := fs.String("listen", "127.0.0.1:0", "serve Streamable HTTP on `HOST:PORT`")
			stdio := fs.Bool("stdio", false, "serve on stdin and stdout")
			fs.Parse(args[1:])
			return serveUpstream(ctx, *listen, *stdio)
		case "proxy":
			fs := flag.NewFlagSet("proxy", flag.ExitOnError)
			listen := fs.String("listen", "127.0.0.1:0", "serve Streamable HTTP on `HOST:PORT`")
			upstream := fs.String("upstream", "", "the upstream's Streamable HTTP `URL`")
			stdio := fs.Bool("upstream-stdio", false, "start the echo upstream as a child, on stdio")
			fs.Parse(args[1:])
			var command []string
			if *stdio {
				command = []string{self(), "upstream", "--stdio"}
			}
			return serveProxy(ctx, *listen, *upstream, command)
		case "load":
			fs := flag.NewFlagSet("load", flag.ExitOnError)
			endpoint := fs.String("endpoint", "", "the MCP `URL` to call")
			tool := fs.String("tool", "echo", "the echo tool's `name` there")
			sessions := fs.Int("sessions", 32, "concurrent MCP `sessions`")
			duration := fs.Duration("duration", 10*time.Second, "how long to call")
			rate := fs.Float64("rate", 0, "calls a second, spread over the sessions (0: back to back)")
			fs.Parse(args[1:])
			return load(ctx, *endpoint, *tool, *sessions, *duration, *rate)
		}
	}
	var o options
	fs := flag.NewFlagSet("gatewaybench", flag.ExitOnError)
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved `rounds`")
	fs.DurationVar(&o.duration, "duration", defaultDuration, "each setup's measured `time`, per phase and round")
	fs.DurationVar(&o.warmup, "warmup", defaultWarmup, "load before each measurement, not counted")
	fs.IntVar(&o.sessions, "sessions", 32, "concurrent MCP `sessions`")
	fs.StringVar(&o.switchboard, "switchboard", "", "the switchboard `binary` (default: built from this module)")
	fs.StringVar(&o.compare, "compare", "", "another switchboard `binary` to measure beside (setups compare-http, compare-stdio)")
	fs.StringVar(&o.tbxark, "tbxark", "", "TBXark/mcp-proxy's `binary` (default: mcp-proxy on PATH; bench/install-peers installs it)")
	fs.BoolVar(&o.smoke, "smoke", false, "one short round: check every setup answers correctly; time nothing")
	fs.StringVar(&o.only, "only", "", "only the setups whose names match this `regexp` (the baseline always runs)")
	fs.IntVar(&o.big, "big", 0, "rather than load, forward one result of this many `bytes` through each gateway and report its memory")
	fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.big > 0 {
		return benchBig(ctx, o)
	}
	return bench(ctx, o)
}

// load calls the echo tool at endpoint, for profiling a gateway under load,
// and prints what it measured.
func load(ctx context.Context, endpoint, tool string, sessions int, d time.Duration, rate float64) error {
	c, err := connectClients(ctx, endpoint, tool, sessions, readyWithin)
	if err != nil {
		return err
	}
	defer c.close()
	var r *loadResult
	if rate > 0 {
		r = c.fixedRate(ctx, rate, 0, d)
	} else {
		r = c.closedLoop(ctx, 0, d)
	}
	fmt.Printf("%d calls, %.0f/s, p50 %v, p99 %v, %d errors\n", r.calls, r.perSecond(), r.quantile(0.5), r.quantile(0.99), r.errs)
	if r.errs > 0 {
		return r.firstErr
	}
	return nil
}
