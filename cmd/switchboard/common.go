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

// version and commit are set at build time with -ldflags "-X main.version=...
// -X main.commit=..." (the release build does); without a version, the
// module version from the build info is used.
var (
	version = ""
	commit  = ""
)

func versionString() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// builtFrom names the commit a binary was built from, abbreviated: the one
// stamped with -X main.commit, else the one the go command recorded from
// git (vcs.revision, with "-dirty" for uncommitted changes), else "".
func builtFrom(stamped string, settings []debug.BuildSetting) string {
	if stamped != "" {
		return shortCommit(stamped)
	}
	var revision, dirty string
	for _, s := range settings {
		switch {
		case s.Key == "vcs.revision":
			revision = shortCommit(s.Value)
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if revision == "" {
		return ""
	}
	return revision + dirty
}

// shortCommit abbreviates a full commit hash as git does by default.
func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
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
		fmt.Fprintln(e.stderr, strings.TrimSpace("Usage: switchboard "+verb+" "+synopsis))
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs, turning help into success and bad flags into
// usage errors. Flags may come before, between and after the positional
// arguments (call TOOL ARGS --config F); "--" ends the flags, so that what
// follows it is positional even if it starts with "-". The positional
// arguments are left as fs.Args().
func parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return &exitError{code: 0}
		}
		if err != nil {
			return errUsage // the flag package has printed why
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if endsFlags(fs, args[:len(args)-len(rest)]) {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Parsing "--" and the positional arguments sets no flag and leaves
	// them as fs.Args().
	return fs.Parse(append([]string{"--"}, positional...))
}

// endsFlags reports whether the flag package stopped at "--" when it parsed
// parsed: "--" is then the last argument it took, and not the value of the
// flag before it (--config --).
func endsFlags(fs *flag.FlagSet, parsed []string) bool {
	n := len(parsed)
	if n == 0 || parsed[n-1] != "--" {
		return false
	}
	return n == 1 || !takesValue(fs, parsed[n-2])
}

// takesValue reports whether arg is a flag of fs that takes the next
// argument as its value: one that is not boolean, without "=value".
func takesValue(fs *flag.FlagSet, arg string) bool {
	name, ok := strings.CutPrefix(arg, "-")
	if !ok {
		return false
	}
	name = strings.TrimPrefix(name, "-")
	if name == "" || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// loadConfig loads the config of a verb that starts its servers, and
// reports its warnings on stderr, and the entries it rejected, unless the
// verb lists every server itself (listsServers), rejected ones included:
// each is then reported once. It returns a *config.ChainError, and says
// nothing else, when this process is a Switchboard that a server of
// another started, and must not run (see config.Chain.Check): that
// Switchboard shows the one line, which exitCode prints.
func (e *env) loadConfig(paths []string, listsServers bool) (*config.Config, error) {
	return e.load(paths, listsServers, config.ParseChain(os.Getenv(config.ChainEnv)))
}

// load is loadConfig with the chain to check given: the zero chain checks
// nothing, for a verb that starts no server (login), or a reload (a new
// entry that starts Switchboard on this config is refused by that
// Switchboard, as a server of this one, while the rest of the config
// applies).
func (e *env) load(paths []string, listsServers bool, chain config.Chain) (*config.Config, error) {
	exe := e.executable
	if exe == "" {
		exe, _ = os.Executable() // on failure, the default runs "switchboard" from PATH
	}
	cfg, err := config.Load(&config.LoadOptions{Paths: paths, Executable: exe})
	if refused := chain.Check(cfg); refused != nil {
		return nil, refused
	}
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
// (within its timeout): a verb reports what is, not what was cached. With
// lists, it waits for every server's prompts and resources too, which
// follow its tools. The caller closes the manager.
func (e *env) connect(ctx context.Context, cfg *config.Config, lists bool) (*switchboard.Manager, error) {
	opts := &switchboard.Options{Client: implementation(), Logger: e.logger(slog.LevelWarn), StartupGate: -1}
	if lists {
		for _, s := range cfg.Servers {
			if s.IsEnabled() {
				opts.WaitFor = append(opts.WaitFor, s.Name)
			}
		}
	}
	m := switchboard.New(cfg, opts)
	if err := m.Connect(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// reportFailures prints the error of every server that is not connected,
// but for the entries the config rejected, which loadConfig reported. It
// returns how many enabled servers are not connected, and how many entries
// the config rejected.
func reportFailures(w io.Writer, cfg *config.Config, m *switchboard.Manager) (down, rejected int) {
	isRejected := make(map[string]bool)
	for _, r := range cfg.Rejected {
		isRejected[r.Name] = true
	}
	for _, s := range m.Status() {
		switch {
		case isRejected[s.Name]:
			rejected++
		case s.State != switchboard.StateConnected && s.State != switchboard.StateDisabled:
			down++
			if s.Err != nil {
				fmt.Fprintf(w, "switchboard: %v\n", s.Err)
			}
		}
	}
	return down, rejected
}

// closeManager closes m and reports a failure to close without masking err.
func (e *env) closeManager(m *switchboard.Manager, err *error) {
	if cerr := m.Close(); cerr != nil && *err == nil {
		fmt.Fprintf(e.stderr, "switchboard: close: %v\n", cerr)
	}
}

// given returns the names of the flags of fs that the command line set.
func given(fs *flag.FlagSet) map[string]bool {
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
