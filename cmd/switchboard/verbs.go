package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/demo"
)

// tools lists every exposed tool.
func (e *env) tools(ctx context.Context, args []string) (err error) {
	var paths configPaths
	fs := e.flags("tools", "[--config F]... [--json] [--search QUERY [--limit N]] [--timeout D]")
	fs.Var(&paths, "config", "config `file` (repeatable)")
	asJSON := fs.Bool("json", false, "print JSON")
	query := fs.String("search", "", "print only the tools that best match `QUERY`, a request in words, best first, with their scores")
	limit := fs.Int("limit", switchboard.DefaultSearchLimit, "with --search, the most matches to print")
	timeout := timeoutFlag(fs, defaultTimeout, "the servers that have no tools in the cache")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("tools: unexpected argument %q", fs.Arg(0))
	}
	set := given(fs)
	searching := set["search"]
	switch {
	case set["limit"] && !searching:
		return usageErrorf("tools: --limit counts the matches of --search; give --search QUERY")
	case searching && strings.TrimSpace(*query) == "":
		return usageErrorf("tools: --search wants a request in words, such as --search \"read a file\"")
	case *limit < 1:
		return usageErrorf("tools: --limit is %d; want a number of matches above 0", *limit)
	}
	if err := checkTimeout("tools", *timeout); err != nil {
		return err
	}
	cfg, err := e.loadConfig(paths, false, nil)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(*timeout)
	m, err := e.connect(ctx, cfg, *timeout, uncached)
	if err != nil {
		return err
	}
	defer e.closeManager(m, &err)
	down, rejected := reportFailures(e.stderr, cfg, m, *timeout)
	cached := cachedServers(m.Status())
	var matches []switchboard.ToolMatch
	if searching {
		if err := e.waitSearchVectors(ctx, m, deadline, *timeout); err != nil {
			return err
		}
		matches, err = m.SearchTools(ctx, *query, &switchboard.SearchOptions{Limit: *limit})
		if errors.Is(err, switchboard.ErrInvalidSearch) {
			return usageErrorf("tools: %v", err)
		}
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
	} else {
		for _, t := range m.Tools(ctx, nil) {
			matches = append(matches, switchboard.ToolMatch{Tool: t})
		}
	}
	if *asJSON {
		type jsonTool struct {
			Name        string               `json:"name"`
			Server      string               `json:"server"`
			Tool        string               `json:"tool"`
			Title       string               `json:"title,omitempty"`
			Description string               `json:"description,omitempty"`
			InputSchema any                  `json:"inputSchema,omitempty"`
			Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
			Score       float64              `json:"score,omitempty"`
			// Cached marks a tool its server had last time, shown from the
			// cache while the server connects.
			Cached bool `json:"cached,omitempty"`
		}
		out := make([]jsonTool, 0, len(matches))
		for _, t := range matches {
			out = append(out, jsonTool{t.Name, t.Server, t.Original, t.Title, t.Description, t.InputSchema(), t.Annotations(), t.Score, cached[t.Server]})
		}
		err = writeJSON(e.stdout, out)
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		if searching {
			fmt.Fprintln(tw, "SCORE\tNAME\tSERVER\tDESCRIPTION")
		} else {
			fmt.Fprintln(tw, "NAME\tSERVER\tDESCRIPTION")
		}
		for _, t := range matches {
			if searching {
				fmt.Fprintf(tw, "%.2f\t", t.Score)
			}
			server := t.Server
			if cached[server] {
				server += " (cached)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", printableLine(t.Name), printableLine(server), printableLine(summary(t.Description)))
		}
		err = tw.Flush()
	}
	if err == nil && down+rejected > 0 {
		fmt.Fprintf(e.stderr, "switchboard: %s; their tools are missing\n", missing(down, rejected, enabled(cfg)))
		return &exitError{code: 1}
	}
	return err
}

// waitSearchVectors waits, until deadline (the verb's --timeout), for the
// tools' vectors of the config's embedding endpoint, if it names one, so
// that a first search fuses them too: the process ends before a gateway's
// background work would have them. Vectors that do not come leave BM25F to
// rank alone, which stderr says in one line (the endpoint's failure is
// logged as such). It returns only ctx's end.
func (e *env) waitSearchVectors(ctx context.Context, m *switchboard.Manager, deadline time.Time, timeout time.Duration) error {
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := m.WaitSearchVectors(wait)
	switch {
	case err == nil, errors.Is(err, switchboard.ErrNoEmbeddings):
		return nil
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(e.stderr, "switchboard: tool search: the embedding endpoint gave no vectors for the tools within --timeout (%v); ranking by BM25F alone\n", timeout)
	}
	return nil // the endpoint failed: logged, saying that BM25F ranks alone
}

// cachedServers returns the servers of st whose tools are shown from the
// cache: those still connecting, and those down since they were seeded.
func cachedServers(st switchboard.Status) map[string]bool {
	cached := make(map[string]bool)
	for _, s := range st {
		if s.Deferred && s.State != switchboard.StateConnected {
			cached[s.Name] = true
		}
	}
	return cached
}

// missing says how many of the enabled servers are not connected (down)
// and how many the config rejected.
func missing(down, rejected, enabled int) string {
	of := count(enabled, "enabled server")
	switch {
	case rejected == 0:
		return fmt.Sprintf("%d of %s not connected", down, of)
	case down == 0:
		return fmt.Sprintf("%d of %s rejected by the config", rejected, of)
	}
	return fmt.Sprintf("%d of %s not connected, %d rejected by the config", down, of, rejected)
}

// enabled counts the enabled entries of cfg, rejected ones included.
func enabled(cfg *config.Config) int {
	n := len(cfg.Rejected)
	for _, s := range cfg.Servers {
		if s.IsEnabled() {
			n++
		}
	}
	return n
}

// count says n things, as "1 tool" or "2 tools".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// summary is the first line of a description, cut to fit a terminal.
func summary(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

// call calls one tool and prints its result.
func (e *env) call(ctx context.Context, args []string) (err error) {
	var paths configPaths
	fs := e.flags("call", "[--config F]... TOOL [JSON-ARGS] [--timeout D]")
	fs.Var(&paths, "config", "config `file` (repeatable)")
	timeout := timeoutFlag(fs, defaultTimeout, "the tool's server to connect (the call itself has the server's own timeout)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageErrorf("call: want TOOL [JSON-ARGS], got %d arguments", fs.NArg())
	}
	if err := checkTimeout("call", *timeout); err != nil {
		return err
	}
	name := fs.Arg(0)
	var toolArgs map[string]any
	if fs.NArg() == 2 {
		if err := json.Unmarshal([]byte(fs.Arg(1)), &toolArgs); err != nil || toolArgs == nil {
			return usageErrorf("call: JSON-ARGS must be a JSON object, such as '{\"text\": \"hi\"}'")
		}
	}
	cfg, err := e.loadConfig(paths, false, nil)
	if err != nil {
		return err
	}
	owners, rule := switchboard.ForTool(cfg, name), ownerOf(ctx, name)
	unowned := len(owners.Servers)+len(owners.Rejected) == 0
	if unowned {
		// No server can have it by its prefix: the error suggests the
		// names it may mean, of every server, as tools lists them.
		owners, rule = cfg, uncached
	}
	m, err := e.connect(ctx, owners, *timeout, rule)
	if err != nil {
		return err
	}
	defer e.closeManager(m, &err)
	if !unowned {
		if err := notYet(ctx, m, name, *timeout); err != nil {
			return err
		}
	}
	res, err := m.CallTool(ctx, nil, &mcp.CallToolParams{Name: name, Arguments: toolArgs})
	if pending := statusNames(m.Status(), unknown); errors.Is(err, switchboard.ErrUnknownTool) && len(pending) > 0 {
		return fmt.Errorf("%w (%s %s still connecting after %v: their tools are not known; --timeout waits longer)",
			err, quotedList(pending), isAre(len(pending)), *timeout)
	}
	if err != nil {
		return errors.New(lineError(err.Error())) // a down server's error carries what it wrote on stderr; exitCode escapes it
	}
	if res.IsError {
		printContent(e.stderr, res)
		return &exitError{code: 1}
	}
	printContent(e.stdout, res)
	return nil
}

// ownerOf waits for the server of the tool called name, if its tools (in
// the cache, or listed) show it, else for every server: the manager has
// only those that may have it (see switchboard.ForTool).
func ownerOf(ctx context.Context, name string) waitRule {
	return func(m *switchboard.Manager) (wait, _ []string) {
		if t, ok := findTool(ctx, m, name); ok {
			return []string{t.Server}, nil
		}
		return everyServer(m)
	}
}

// findTool returns the tool called name, if m exposes it.
func findTool(ctx context.Context, m *switchboard.Manager, name string) (switchboard.Tool, bool) {
	for _, t := range m.Tools(ctx, nil) {
		if t.Name == name {
			return t, true
		}
	}
	return switchboard.Tool{}, false
}

// notYet returns the error of a call that cannot be made yet: the tool's
// server, or a server that may have it, is still connecting after timeout.
// A call would wait for it again, within the server's timeout.
func notYet(ctx context.Context, m *switchboard.Manager, name string, timeout time.Duration) error {
	st := m.Status()
	connecting := func(s switchboard.ServerStatus) bool { return s.State == switchboard.StateConnecting }
	if t, ok := findTool(ctx, m, name); ok {
		if s, _ := st.Server(t.Server); connecting(s) {
			return fmt.Errorf("call %q: server %q: %s", name, s.Name, stillConnecting(s, timeout))
		}
		return nil
	}
	if pending := statusNames(st, connecting); len(pending) > 0 {
		return fmt.Errorf("call %q: no connected server has that tool, and %s %s still connecting after %v (--timeout waits longer)",
			name, quotedList(pending), isAre(len(pending)), timeout)
	}
	return nil
}

// isAre is "is" for one, "are" for more.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// printContent prints a result: text as is, anything else as JSON, and the
// structured content when there is nothing else.
func printContent(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Fprintln(w, printable(t.Text))
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			fmt.Fprintf(w, "[unprintable %T content]\n", c)
			continue
		}
		fmt.Fprintln(w, printable(string(b)))
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, err := json.MarshalIndent(res.StructuredContent, "", "  ")
		if err == nil {
			fmt.Fprintln(w, printable(string(b)))
		}
	}
}

// status prints every server's state: connected for the occasion, or, with
// --gateway, as a running gateway sees them.
func (e *env) status(ctx context.Context, args []string) (err error) {
	var paths configPaths
	fs := e.flags("status", "[--config F]... [--json] [--timeout D] | --gateway URL [--auth-token-env NAME] [--json]")
	fs.Var(&paths, "config", "config `file` (repeatable)")
	asJSON := fs.Bool("json", false, "print JSON")
	timeout := timeoutFlag(fs, statusTimeout, "the servers, or with --gateway for its answer; a server that takes longer shows as connecting")
	gatewayURL := fs.String("gateway", "", "ask the running gateway at `URL` (such as http://127.0.0.1:7777) instead")
	tokenEnv := fs.String("auth-token-env", "", "with --gateway, send 'Authorization: Bearer TOKEN', with TOKEN read from the environment variable `NAME`")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("status: unexpected argument %q", fs.Arg(0))
	}
	if err := checkTimeout("status", *timeout); err != nil {
		return err
	}
	if *gatewayURL != "" {
		if len(paths) > 0 {
			return usageErrorf("status: --config and --gateway: the gateway has its own config; give one or the other")
		}
		if given(fs)["timeout"] {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		return e.gatewayStatus(ctx, *gatewayURL, *tokenEnv, *asJSON)
	}
	if *tokenEnv != "" {
		return usageErrorf("status: --auth-token-env is for --gateway")
	}
	cfg, err := e.loadConfig(paths, true, nil)
	if err != nil {
		return err
	}
	m, err := e.connect(ctx, cfg, *timeout, everyServer) // for the lists too: the resources tell the collisions
	if err != nil {
		return err
	}
	defer e.closeManager(m, &err)
	statuses := m.Status()
	cached := cachedServers(statuses)
	if *asJSON {
		type jsonStatus struct {
			Name      string            `json:"name"`
			State     switchboard.State `json:"state"`
			Transport string            `json:"transport"`
			Source    string            `json:"source,omitempty"`
			Required  bool              `json:"required"`
			Tools     int               `json:"tools"`
			// Cached reports tools shown from the cache: the server
			// has not listed its own.
			Cached  bool                `json:"cached,omitempty"`
			Skipped uint64              `json:"skippedLines,omitempty"`
			Error   string              `json:"error,omitempty"`
			Server  *mcp.Implementation `json:"serverInfo,omitempty"`
			// Collisions are the resource URIs that the server offers but
			// another one, configured first, serves.
			Collisions []string `json:"collisions,omitempty"`
			// Trespasses are the tools and prompts, in another server's
			// namespace, that the server lists and is not let expose.
			Trespasses []string `json:"trespasses,omitempty"`
			// Pinning is the server's tool pinning mode, unless off;
			// Held the public names of its held tools, and PinChanges
			// its tools not as pinned. PinsError says why the pins file
			// cannot be read.
			Pinning    string           `json:"pinning,omitempty"`
			Held       []string         `json:"held,omitempty"`
			PinChanges []gateway.PinRow `json:"pinChanges,omitempty"`
			PinsError  string           `json:"pinsError,omitempty"`
		}
		_, pinsErr := m.PinsFile()
		out := make([]jsonStatus, 0, len(statuses))
		for _, s := range statuses {
			js := jsonStatus{Name: s.Name, State: s.State, Transport: string(s.Transport), Source: s.Source, Required: s.Required,
				Tools: s.Tools, Cached: cached[s.Name], Skipped: s.SkippedLines, Server: s.ServerInfo, Error: s.ErrorText(), Collisions: s.Collisions, Trespasses: s.Trespasses}
			if pinned(s) {
				js.Pinning, js.Held, js.PinChanges = string(s.Pinning), s.Held(), gateway.PinRows(s)
				if pinsErr != nil {
					js.PinsError = switchboard.ServerStatus{Err: pinsErr}.ErrorText()
				}
			}
			out = append(out, js)
		}
		return writeJSON(e.stdout, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	// No PID: the processes this verb started end with it.
	fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tTOOLS\tRECONNECTS\tERROR")
	for _, s := range statuses {
		tools := strconv.Itoa(s.Tools)
		if cached[s.Name] {
			tools += " (cached)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", printableLine(s.Name), s.State, s.Transport, tools, s.Reconnects, printableLine(tableError(s.ErrorText(), "--json")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	notes := make([]statusNote, len(statuses))
	for i, s := range statuses {
		notes[i] = statusNote{name: s.Name, collisions: s.Collisions, trespasses: s.Trespasses, skipped: s.SkippedLines}
		for _, tp := range s.PinChanges {
			notes[i].addPin(tp.Name, tp.Held, tp.State != switchboard.PinRemoved)
		}
	}
	if file, err := m.PinsFile(); err != nil {
		notes = append(notes, statusNote{pinsFile: file, pinsError: switchboard.ServerStatus{Err: err}.ErrorText()})
	}
	return printNotes(e.stdout, notes)
}

// pinned reports whether s is under tool pinning.
func pinned(s switchboard.ServerStatus) bool {
	return s.Pinning != "" && s.Pinning != config.PinningOff
}

// A statusNote is what a status table says below it about one server: the
// resource URIs it offers that another server, configured first, serves,
// the names it lists in another server's namespace, how many lines it
// wrote on stdout that are not JSON-RPC, and its tools that tool pinning
// holds, or would (warn). A note with pinsError, and no name, says why the
// pins file cannot be read.
type statusNote struct {
	name       string
	collisions []string
	trespasses []string
	skipped    uint64
	held       []string // public names
	unpinned   []string // listed, not as pinned, not held
	pinsFile   string
	pinsError  string
}

// addPin notes a tool that is not as pinned: held, or listed and not held.
func (n *statusNote) addPin(name string, held, listed bool) {
	switch {
	case held:
		n.held = append(n.held, name)
	case listed:
		n.unpinned = append(n.unpinned, name)
	}
}

// shownCollisions is how many of a server's colliding resource URIs, or of
// its trespassing names, a status table shows; --json lists them all.
const shownCollisions = 3

// shownList joins at most shownCollisions of items, and says how many more
// --json lists.
func shownList(items []string) string {
	shown := strings.Join(items[:min(len(items), shownCollisions)], ", ")
	if more := len(items) - shownCollisions; more > 0 {
		shown += fmt.Sprintf(" and %d more (--json lists them)", more)
	}
	return shown
}

// printNotes prints, below a status table, the notes that say something,
// after a blank line.
func printNotes(w io.Writer, notes []statusNote) error {
	var lines []string
	for _, n := range notes {
		if uris := n.collisions; len(uris) > 0 {
			lines = append(lines, fmt.Sprintf("%s: %s served by a server configured before it: %s", n.name, count(len(uris), "resource URI"), shownList(uris)))
		}
		if names := n.trespasses; len(names) > 0 {
			lines = append(lines, fmt.Sprintf("%s: %s in another server's namespace, not exposed: %s", n.name, count(len(names), "name"), shownList(names)))
		}
		if n.skipped > 0 {
			lines = append(lines, fmt.Sprintf("%s: skipped %s on stdout (not JSON-RPC)", n.name, count(int(n.skipped), "line")))
		}
		if names := n.held; len(names) > 0 {
			lines = append(lines, fmt.Sprintf("%s: %s held until a person approves %s (--json gives the commands): %s", n.name, count(len(names), "tool"), themIt(len(names)), shownList(names)))
		}
		if names := n.unpinned; len(names) > 0 {
			lines = append(lines, fmt.Sprintf("%s: %s not as pinned, not held (warn): %s", n.name, count(len(names), "tool"), shownList(names)))
		}
		if n.pinsError != "" {
			lines = append(lines, fmt.Sprintf("the pins file cannot be read (the tools of servers under enforce are held): %s", n.pinsError))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	for i, l := range lines {
		lines[i] = printableLine(l)
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	return err
}

// themIt returns "them", or "it" for one.
func themIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// check exits 0 only if every enabled server connects.
func (e *env) check(ctx context.Context, args []string) (err error) {
	var paths configPaths
	fs := e.flags("check", "[--config F]... [--timeout D]")
	fs.Var(&paths, "config", "config `file` (repeatable)")
	timeout := timeoutFlag(fs, defaultTimeout, "every server")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("check: unexpected argument %q", fs.Arg(0))
	}
	if err := checkTimeout("check", *timeout); err != nil {
		return err
	}
	cfg, err := e.loadConfig(paths, true, nil)
	if err != nil {
		return err
	}
	m, err := e.connect(ctx, cfg, *timeout, everyServer)
	if err != nil {
		return err
	}
	defer e.closeManager(m, &err)
	bad := 0
	for _, s := range m.Status() {
		switch {
		case s.State == switchboard.StateDisabled:
			fmt.Fprintf(e.stdout, "skip  %s: disabled\n", printableLine(s.Name))
		case s.State == switchboard.StateConnected:
			fmt.Fprintf(e.stdout, "ok    %s: %s\n", printableLine(s.Name), count(s.Tools, "tool"))
		case s.Err == nil:
			bad++
			fmt.Fprintf(e.stdout, "FAIL  %s: %s\n", printableLine(s.Name), stillConnecting(s, *timeout))
		default:
			bad++
			fmt.Fprintf(e.stdout, "FAIL  %s: %s: %s\n", printableLine(s.Name), s.State, printableLine(tableError(s.ErrorText(), "status --json")))
		}
	}
	if bad > 0 {
		fmt.Fprintf(e.stderr, "switchboard: %d of %s not ready\n", bad, count(enabled(cfg), "enabled server"))
		return &exitError{code: 1}
	}
	if len(cfg.Servers) == 0 {
		// A check of nothing must not pass for one of something: a CI step
		// in a repository whose project file is not trusted, say.
		why := "the config has no server"
		for _, w := range cfg.Warnings {
			if u, ok := errors.AsType[*config.UntrustedError](w); ok {
				why = fmt.Sprintf("%s is not trusted (see the warning above)", printableLine(u.File))
			}
		}
		fmt.Fprintf(e.stderr, "switchboard: no server to check: %s\n", why)
		return &exitError{code: 1}
	}
	return nil
}

// demoServer runs the built-in demo MCP server on stdin and stdout, or on
// Streamable HTTP with --listen.
func (e *env) demoServer(ctx context.Context, args []string) error {
	fs := e.flags("demo-server", "[--name NAME] [--listen HOST:PORT]")
	name := fs.String("name", "demo", "the server's `name`, as reported to clients")
	listen := fs.String("listen", "", "serve Streamable HTTP at `HOST:PORT`/mcp instead of stdio")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("demo-server: unexpected argument %q", fs.Arg(0))
	}
	if *listen == "" {
		return demo.Serve(ctx, *name, e.stdin, e.stdout)
	}
	if !isLoopback(*listen) {
		return fmt.Errorf("demo-server: --listen %s is not a loopback address; the demo server has no authentication", *listen)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("demo-server: %w", err)
	}
	server := demo.New(*name)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "demo-server %q: serving MCP at http://%s/mcp\n", *name, ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Close()
		<-served
		return nil
	case err := <-served:
		return fmt.Errorf("demo-server: %w", err)
	}
}

// version prints the version of switchboard, the commit it was built from
// when it is known, and the versions of its protocol library and Go.
func (e *env) version(args []string) error {
	fs := e.flags("version", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version: unexpected argument %q", fs.Arg(0))
	}
	sdk := "unknown"
	var settings []debug.BuildSetting
	if info, ok := debug.ReadBuildInfo(); ok {
		settings = info.Settings
		for _, dep := range info.Deps {
			if dep.Path == "github.com/modelcontextprotocol/go-sdk" {
				sdk = dep.Version
			}
		}
	}
	built := ""
	if c := builtFrom(commit, settings); c != "" {
		built = "commit " + c + ", "
	}
	fmt.Fprintf(e.stdout, "switchboard %s (%sgo-sdk %s, %s)\n", versionString(), built, sdk, runtime.Version())
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// pidText is a process ID in a status table: "-" when there is none.
func pidText(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}
