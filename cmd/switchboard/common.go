package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it, the module version from the build info is used.
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// implementation is how Switchboard introduces itself, to servers and to
// clients.
func implementation() *mcp.Implementation {
	return &mcp.Implementation{Name: "switchboard", Version: versionString()}
}

// configPaths is a repeatable --config flag.
type configPaths []string

func (p *configPaths) String() string { return strings.Join(*p, ",") }

func (p *configPaths) Set(v string) error {
	*p = append(*p, v)
	return nil
}

// flags returns a flag set for verb that prints its errors to stderr.
func (e *env) flags(verb, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: switchboard %s %s\n", verb, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs, turning help into success and bad flags into
// usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return &exitError{code: 0}
	}
	if err != nil {
		return errUsage // the flag package has printed why
	}
	return nil
}

// loadConfig loads the config and reports its warnings on stderr, and the
// entries it rejected, unless the verb lists every server itself
// (listsServers), rejected ones included: each is then reported once.
func (e *env) loadConfig(paths []string, listsServers bool) (*config.Config, error) {
	exe := e.executable
	if exe == "" {
		exe, _ = os.Executable() // on failure, the default runs "switchboard" from PATH
	}
	cfg, err := config.Load(&config.LoadOptions{Paths: paths, Executable: exe})
	for _, w := range cfg.Warnings {
		fmt.Fprintf(e.stderr, "switchboard: warning: %v\n", w)
	}
	for _, r := range cfg.Rejected {
		if !listsServers {
			fmt.Fprintf(e.stderr, "switchboard: %v (skipped)\n", r.Err)
		}
	}
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// logger returns the diagnostics logger of the CLI: text on stderr.
func (e *env) logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// connect connects every server of cfg, waiting for each to connect or fail
// (within its timeout): a verb reports what is, not what was cached. The
// caller closes the manager.
func (e *env) connect(ctx context.Context, cfg *config.Config) (*switchboard.Manager, error) {
	m := switchboard.New(cfg, &switchboard.Options{Client: implementation(), Logger: e.logger(slog.LevelWarn), StartupGate: -1})
	if err := m.Connect(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// reportFailures prints the error of every server that is not connected,
// but for the entries the config rejected, which loadConfig reported. It
// returns how many enabled servers are not connected, rejected entries
// included.
func reportFailures(w io.Writer, cfg *config.Config, m *switchboard.Manager) int {
	rejected := make(map[string]bool)
	for _, r := range cfg.Rejected {
		rejected[r.Name] = true
	}
	n := 0
	for _, s := range m.Status() {
		if s.State == switchboard.StateConnected || s.State == switchboard.StateDisabled {
			continue
		}
		n++
		if s.Err != nil && !rejected[s.Name] {
			fmt.Fprintf(w, "switchboard: %v\n", s.Err)
		}
	}
	return n
}

// closeManager closes m and reports a failure to close without masking err.
func (e *env) closeManager(m *switchboard.Manager, err *error) {
	if cerr := m.Close(); cerr != nil && *err == nil {
		fmt.Fprintf(e.stderr, "switchboard: close: %v\n", cerr)
	}
}
