package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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

// parse parses args into fs, turning help into success (with the verb's
// usage) and bad flags into usage errors of one line, which say what is
// wrong, without the usage that would bury it. Flags may come before,
// between and after the positional arguments (call TOOL ARGS --config F);
// "--" ends the flags, so that what follows it is positional even if it
// starts with "-". The positional arguments are left as fs.Args().
func parse(fs *flag.FlagSet, args []string) error {
	usage, output := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() {
		fs.Usage = usage
		fs.SetOutput(output)
	}()
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(output)
			usage()
			return &exitError{code: 0}
		}
		if err != nil {
			return usageErrorf("%s: %s", fs.Name(), flagError(err))
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

// flagError is the flag package's error as the docs write flags, with two
// dashes, and saying what a value should be rather than "parse error".
func flagError(err error) string {
	msg := flagName.ReplaceAllString(err.Error(), "$1--$2")
	want := "want a whole number"
	if strings.Contains(msg, "invalid boolean value") {
		want = "want true or false"
	}
	return strings.Replace(msg, ": parse error", ": "+want, 1)
}

// flagName matches a flag's name in the flag package's errors.
var flagName = regexp.MustCompile(`(defined: |flag |for |argument: )-(\w)`)

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
// reports its warnings, and the entries it rejected, unless the verb lists
// every server itself (listsServers), rejected ones included: each is then
// reported once. They go to logger, as structured lines like the rest of a
// gateway's log, or, with a nil logger, to stderr as a one-shot verb's
// plain lines. It returns a *config.ChainError, and says nothing else, when
// this process is a Switchboard that a server of another started, and must
// not run (see config.Chain.Check): that Switchboard shows the one line,
// which exitCode prints.
func (e *env) loadConfig(paths []string, listsServers bool, logger *slog.Logger) (*config.Config, error) {
	return e.load(paths, listsServers, logger, config.ParseChain(os.Getenv(config.ChainEnv)))
}

// load is loadConfig with the chain to check given: the zero chain checks
// nothing, for a verb that starts no server (login), or a reload (a new
// entry that starts Switchboard on this config is refused by that
// Switchboard, as a server of this one, while the rest of the config
// applies).
func (e *env) load(paths []string, listsServers bool, logger *slog.Logger, chain config.Chain) (*config.Config, error) {
	exe := e.executable
	if exe == "" {
		exe, _ = os.Executable() // on failure, the default runs "switchboard" from PATH
	}
	cfg, err := config.Load(&config.LoadOptions{Paths: paths, Executable: exe})
	if refused := chain.Check(cfg); refused != nil {
		return nil, refused
	}
	for _, w := range cfg.Warnings {
		if logger != nil {
			logger.Warn("config warning", "warning", w)
		} else {
			fmt.Fprintf(e.stderr, "switchboard: warning: %s\n", printable(w.Error()))
		}
	}
	for _, r := range cfg.Rejected {
		switch {
		case listsServers:
		case logger != nil:
			logger.Warn("config entry rejected", "server", r.Name, "error", r.Err)
		default:
			fmt.Fprintf(e.stderr, "switchboard: %s (skipped)\n", printable(r.Err.Error()))
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

// defaultTimeout is how long a one-shot verb waits for servers to connect,
// unless --timeout says otherwise: long enough for a first npx download,
// short enough that a hanging server does not hold up the terminal.
const defaultTimeout = 10 * time.Second

// statusTimeout is status's --timeout unless given: a glance past the
// startup gate, which shows a server that takes longer as connecting.
const statusTimeout = time.Second

// timeoutFlag adds --timeout to fs, as every one-shot verb has it, with d
// its default.
func timeoutFlag(fs *flag.FlagSet, d time.Duration, waitsFor string) *time.Duration {
	return durationFlag(fs, "timeout", d, "wait at most `D` for "+waitsFor+" (such as 30s or 2m)")
}

// durationFlag is fs.Duration, whose error says what a duration looks like:
// a bare number ("30", seconds or the config's milliseconds?) is refused
// with an example rather than "parse error".
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := &durationValue{value}
	fs.Var(d, name, usage)
	return &d.d
}

type durationValue struct{ d time.Duration }

func (v *durationValue) String() string { return v.d.String() }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration with its unit, such as 500ms, 30s or 2m")
	}
	v.d = d
	return nil
}

// checkTimeout refuses a --timeout that waits for nothing.
func checkTimeout(verb string, d time.Duration) error {
	if d <= 0 {
		return usageErrorf("%s: --timeout is %v; want a duration above 0, such as 30s", verb, d)
	}
	return nil
}

// A waitRule picks, once the startup gate has passed, the servers a verb
// goes on waiting for: those it waits for until they settle, at most its
// --timeout from the start, and those it only glances at (glanceWait past
// the gate): servers still connecting with their tools from the cache,
// whose state a verb shows but need not wait for.
type waitRule func(m *switchboard.Manager) (wait, glance []string)

// glanceWait is how long past the startup gate a verb glances at a server
// that shows its tools from the cache, or failed last time: one that starts
// quickly is connected by then (and one that failed last time, but no
// more, gets its tools cached), and one that hangs costs no more.
const glanceWait = 750 * time.Millisecond

// uncached waits for the servers still connecting with nothing to show,
// and glances at those that failed the last time they were started: the
// others show the tools they had last time, from the cache.
func uncached(m *switchboard.Manager) (wait, glance []string) {
	st := m.Status()
	return statusNames(st, unknown), statusNames(st, failedBefore)
}

// everyServer waits for every enabled server.
func everyServer(m *switchboard.Manager) (wait, _ []string) {
	return statusNames(m.Status(), runs), nil
}

// runs reports whether s is a server that runs: enabled, and not rejected.
func runs(s switchboard.ServerStatus) bool {
	return !s.Rejected && s.State != switchboard.StateDisabled
}

// unknown reports whether s is still connecting with nothing known of it:
// no tools from the cache, and no failure the last time it was started.
func unknown(s switchboard.ServerStatus) bool {
	return s.State == switchboard.StateConnecting && !s.Deferred && s.FailedBefore == ""
}

// connectingCached reports whether s is still connecting with the tools it
// had last time, from the cache.
func connectingCached(s switchboard.ServerStatus) bool {
	return s.State == switchboard.StateConnecting && s.Deferred
}

// failedBefore reports whether s is still connecting with no tools from
// the cache, and failed the last time it was started with this config.
func failedBefore(s switchboard.ServerStatus) bool {
	return s.State == switchboard.StateConnecting && !s.Deferred && s.FailedBefore != ""
}

// statusNames returns the names of the servers of st that keep says.
func statusNames(st switchboard.Status, keep func(switchboard.ServerStatus) bool) []string {
	var names []string
	for _, s := range st {
		if keep(s) {
			names = append(names, s.Name)
		}
	}
	return names
}

// commandPinning is the command's default tool pinning (design §2 "Tool
// pinning"): warn, in the default pins file; a config's "pinning" overrides it.
var commandPinning = config.Pinning{Mode: config.PinningWarn}

// connect connects every server of cfg behind the startup gate, as the
// gateway does, so that a server with tools in the cache shows them at
// once; then it waits for the servers that rule picks, until they settle
// or timeout has passed since the start, saying on stderr whom it waits
// for. A server that has not settled by then is left connecting: the verb
// reports it as such. The caller closes the manager.
func (e *env) connect(ctx context.Context, cfg *config.Config, timeout time.Duration, rule waitRule) (*switchboard.Manager, error) {
	deadline := time.Now().Add(timeout)
	level := slog.LevelWarn
	if e.pinsVerb {
		level = slog.LevelError
	}
	m := switchboard.New(cfg, &switchboard.Options{Client: implementation(), Logger: e.logger(level), Pinning: commandPinning})
	if err := m.Connect(ctx); err != nil {
		m.Close()
		return nil, err
	}
	waits, glances := rule(m)
	if len(waits)+len(glances) == 0 {
		return m, nil
	}
	// A wait that lasts says whom it is for; a short one says nothing.
	announced := make(chan struct{})
	announce := time.AfterFunc(announceAfter, func() {
		defer close(announced)
		connecting := statusNames(m.Status(), func(s switchboard.ServerStatus) bool {
			return s.State == switchboard.StateConnecting && slices.Contains(waits, s.Name)
		})
		if left := time.Until(deadline); len(connecting) > 0 && left > 0 {
			fmt.Fprintf(e.stderr, "switchboard: waiting up to %v more for %s to connect (--timeout sets how long)\n",
				left.Round(time.Second), quotedList(connecting))
		}
	})
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var glancing sync.WaitGroup
	if len(glances) > 0 {
		glancing.Go(func() {
			glance, cancel := context.WithTimeout(wait, glanceWait)
			defer cancel()
			m.WaitSettled(glance, glances...)
		})
	}
	var err error
	if len(waits) > 0 {
		err = m.WaitSettled(wait, waits...)
	}
	glancing.Wait()
	if !announce.Stop() {
		<-announced // it is under way: it comes before the verb's output
	}
	if err != nil && ctx.Err() != nil {
		m.Close()
		return nil, context.Cause(ctx)
	}
	return m, nil
}

// announceAfter is how long a verb waits for servers, past the startup
// gate, before it says whom it waits for.
const announceAfter = time.Second

// quotedList quotes names and joins them: "a", "b" and "c".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// reportFailures prints the error of every server that is not connected,
// and names the ones still connecting after timeout, but for the entries
// the config rejected, which loadConfig reported, and the servers that
// show their tools from the cache meanwhile. It returns how many enabled
// servers have nothing to show, and how many entries the config rejected.
func reportFailures(w io.Writer, cfg *config.Config, m *switchboard.Manager, timeout time.Duration) (down, rejected int) {
	isRejected := make(map[string]bool)
	for _, r := range cfg.Rejected {
		isRejected[r.Name] = true
	}
	for _, s := range m.Status() {
		switch {
		case isRejected[s.Name]:
			rejected++
		case s.State == switchboard.StateConnected || s.State == switchboard.StateDisabled:
		case s.Err != nil:
			down++
			fmt.Fprintf(w, "switchboard: %s\n", printable(lineError(s.Err.Error())))
		case connectingCached(s):
		case failedBefore(s):
			down++
			fmt.Fprintf(w, "switchboard: server %q: still connecting; the last time, it failed: %s (check waits for it)\n",
				s.Name, printable(strings.TrimPrefix(s.FailedBefore, fmt.Sprintf("server %q: ", s.Name))))
		default:
			down++
			fmt.Fprintf(w, "switchboard: server %q: %s\n", s.Name, stillConnecting(s, timeout))
		}
	}
	return down, rejected
}

// stillConnecting says that s has not settled within timeout.
func stillConnecting(s switchboard.ServerStatus, timeout time.Duration) string {
	return fmt.Sprintf("still %s after %v (--timeout waits longer)", s.State, timeout)
}

// closeManager closes m and reports a failure to close without masking err.
func (e *env) closeManager(m *switchboard.Manager, err *error) {
	if cerr := m.Close(); cerr != nil && *err == nil {
		fmt.Fprintf(e.stderr, "switchboard: close: %s\n", printable(cerr.Error()))
	}
}

// given returns the names of the flags of fs that the command line set.
func given(fs *flag.FlagSet) map[string]bool {
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
