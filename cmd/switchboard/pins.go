package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/pins"
)

const pinsSynopsis = "[diff [SERVER[/TOOL]]... | approve SERVER[/TOOL]... | approve --all] [--config F]... [--json] [--timeout D]"

// pinsHelp is what 'switchboard help pins' and 'switchboard pins -h' print.
const pinsHelp = `Usage:
  switchboard pins         [--config F]... [--json] [--timeout D]
  switchboard pins diff    [SERVER[/TOOL]]... [--config F]... [--json] [--timeout D]
  switchboard pins approve SERVER[/TOOL]... | --all [--config F]... [--timeout D]

Tool pinning keeps the definition of each tool (name, title, description,
schemas, annotations) as it was first trusted, in the pins file, and
checks every tool list against it. Each verb connects the servers, waiting
for them at most --timeout (10s).

  pins          lists every tool of every server under pinning as pinned,
                changed, new, removed, duplicate, invalid or unchecked
                (the pins file cannot be read), the fields that changed,
                whether it is held (mode enforce) or its description looks
                suspicious, and the pins file. A server with no pins is
                pinned as it lists its tools now (trust on first use):
                its tools show "first use".
  pins diff     shows each change field by field: a description's old and
                new lines (- and +), a schema's properties and required
                names added, removed and changed, each annotation's old
                and new value, a new tool's whole definition, and what
                looks like an instruction slipped in ("!! suspicious").
                SERVER or SERVER/TOOL (TOOL as its server names it) limit
                it to those.
  pins approve  pins what the servers list now: SERVER pins all its tools
                (and forgets those it no longer lists), SERVER/TOOL one;
                --all every server under pinning. A running gateway
                releases the tools it held.

Exit status: 0 when done (changes found are not an error); 1 when a server
under pinning is not connected, the pins file cannot be read, or a target
of diff or approve is unknown, has pinning off or cannot be pinned (approve
pins the other targets all the same); 2 for a usage error.
`

// pins runs 'switchboard pins', 'pins diff' and 'pins approve'.
func (e *env) pins(ctx context.Context, args []string) (err error) {
	var paths configPaths
	fs := e.flags("pins", pinsSynopsis)
	fs.Usage = func() { fmt.Fprint(e.stderr, pinsHelp) }
	fs.Var(&paths, "config", "config `file` (repeatable)")
	asJSON := fs.Bool("json", false, "print JSON")
	all := fs.Bool("all", false, "with approve, approve every server's tools")
	timeout := timeoutFlag(fs, defaultTimeout, "the servers")
	if err := parse(fs, args); err != nil {
		return err
	}
	cmd, targets := "", fs.Args()
	if len(targets) > 0 {
		switch targets[0] {
		case "diff", "approve":
			cmd, targets = targets[0], targets[1:]
		default:
			return usageErrorf("pins: unknown command %q; want diff or approve, or no argument to list the pins", targets[0])
		}
	}
	if *all && cmd != "approve" {
		return usageErrorf("pins: --all is for approve")
	}
	switch {
	case cmd == "approve" && *asJSON:
		return usageErrorf("pins approve: --json is for pins and pins diff")
	case cmd == "approve" && *all && len(targets) > 0:
		return usageErrorf("pins approve: --all and %q: give servers and tools, or --all", targets[0])
	case cmd == "approve" && !*all && len(targets) == 0:
		return usageErrorf("pins approve: want SERVER[/TOOL]... to approve, or --all for every server")
	}
	for _, t := range targets {
		if server, tool, _, one := pins.SplitTarget(t, nil); server == "" || one && tool == "" {
			return usageErrorf("pins %s: %q: want SERVER or SERVER/TOOL", cmd, t)
		}
	}
	if err := checkTimeout("pins", *timeout); err != nil {
		return err
	}
	cfg, err := e.loadConfig(paths, true, nil)
	if err != nil {
		return err
	}
	if len(targets) > 0 {
		if cfg, err = onlyServers(cfg, targets, "pins "+cmd); err != nil {
			return err
		}
	}
	// Which servers had pins before this run: the others are pinned on
	// first use as they connect.
	hadPins := map[string]bool{}
	if path, err := cfg.PinsFile(commandPinning.File, nil); err == nil {
		if f, err := pins.Load(path); err == nil {
			for name := range f.Servers {
				hadPins[name] = true
			}
		}
	}
	quiet := *e
	quiet.pinsVerb = true
	m, err := quiet.connect(ctx, cfg, *timeout, everyServer)
	if err != nil {
		return err
	}
	defer e.closeManager(m, &err)
	r := &pinsRun{env: e, m: m, cfg: cfg, st: m.Status(), hadPins: hadPins, timeout: *timeout}
	if targets, err = r.resolve(targets, "pins "+cmd); err != nil {
		return err
	}
	switch cmd {
	case "diff":
		return r.diff(targets, *asJSON)
	case "approve":
		return r.approve(ctx, targets)
	}
	return r.list(*asJSON)
}

// onlyServers returns cfg with only the servers that targets name, or an
// error naming a server it does not have.
func onlyServers(cfg *config.Config, targets []string, op string) (*config.Config, error) {
	want := map[string]bool{}
	names := configNames(cfg)
	for _, t := range targets {
		server, _, _, one := pins.SplitTarget(t, names)
		if !one && !slices.Contains(names, server) {
			return cfg, nil // a tool's public name, maybe: which server lists it is known once they are connected
		}
		want[server] = true
	}
	only := *cfg
	only.Servers, only.Rejected = nil, nil
	for _, s := range cfg.Servers {
		if want[s.Name] {
			only.Servers = append(only.Servers, s)
			delete(want, s.Name)
		}
	}
	for _, r := range cfg.Rejected {
		if want[r.Name] {
			only.Rejected = append(only.Rejected, r)
			delete(want, r.Name)
		}
	}
	if len(want) > 0 {
		unknown := slices.Sorted(func(yield func(string) bool) {
			for name := range want {
				if !yield(name) {
					return
				}
			}
		})
		return nil, fmt.Errorf("%s: %s: %w (the config has %s)", op, quotedList(unknown), switchboard.ErrUnknownServer, serverNames(cfg))
	}
	return &only, nil
}

// serverNames lists the servers of cfg for an error.
func serverNames(cfg *config.Config) string {
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	for _, r := range cfg.Rejected {
		names = append(names, r.Name)
	}
	if len(names) == 0 {
		return "no server"
	}
	return quotedList(names)
}

// pinsRun is one run of a pins verb, once its servers are connected.
type pinsRun struct {
	*env
	m       *switchboard.Manager
	cfg     *config.Config
	st      switchboard.Status
	hadPins map[string]bool // the servers that had pins before this run
	timeout time.Duration
}

// firstUse reports whether tp was pinned by this run, on first use.
func (r *pinsRun) firstUse(tp switchboard.ToolPin) bool {
	return tp.State == switchboard.PinPinned && !r.hadPins[tp.Server]
}

// unchecked says why the tools of s are not checked, or "" if they are.
func (r *pinsRun) unchecked(s switchboard.ServerStatus) string {
	switch {
	case s.Rejected:
		return "rejected by the config: " + tableError(s.ErrorText(), "status --json")
	case s.State == switchboard.StateDisabled:
		return "disabled"
	case s.Pinning == config.PinningOff:
		return "pinning off: its tools are not checked"
	case s.State == switchboard.StateConnected:
		return ""
	case s.Err == nil:
		return "not connected: " + stillConnecting(s, r.timeout) + "; its tools are not checked"
	}
	return fmt.Sprintf("not connected (%s): %s; its tools are not checked", s.State, tableError(s.ErrorText(), "status --json"))
}

// pins returns the tools of the servers whose tools were checked: under
// pinning and connected. (A server that is down has no list to check: its
// pins would all look removed.)
func (r *pinsRun) pins() []switchboard.ToolPin {
	var out []switchboard.ToolPin
	for _, tp := range r.m.Pins() {
		if s, ok := r.st.Server(tp.Server); ok && r.unchecked(s) == "" {
			out = append(out, tp)
		}
	}
	return out
}

// down counts the servers under pinning that are not connected: their
// tools are not checked.
func (r *pinsRun) down() int {
	n := 0
	for _, s := range r.st {
		if s.Pinning != config.PinningOff && s.State != switchboard.StateDisabled && s.State != switchboard.StateConnected {
			n++
		}
	}
	return n
}

// fileError returns the error of a pins file that cannot be read.
func (r *pinsRun) fileError() error {
	path, err := r.m.PinsFile()
	if err == nil {
		return nil
	}
	if path == "" {
		return fmt.Errorf("tool pinning: no pins file: %w", err)
	}
	return fmt.Errorf("tool pinning: the pins file %s cannot be read: %w", path, err)
}

// pinsJSON is what 'switchboard pins --json' prints.
type pinsJSON struct {
	// File is the pins file; "" when no server's pinning is on.
	File string `json:"file"`
	// FileError says why the file cannot be read.
	FileError string           `json:"fileError,omitempty"`
	Servers   []pinsServerJSON `json:"servers"`
}

type pinsServerJSON struct {
	Name    string             `json:"name"`
	Pinning config.PinningMode `json:"pinning"`
	State   string             `json:"state"`
	// Checked reports whether its tools were checked: it is under pinning
	// and connected.
	Checked bool          `json:"checked"`
	Error   string        `json:"error,omitempty"`
	Tools   []toolPinJSON `json:"tools"`
}

type toolPinJSON struct {
	Tool       string               `json:"tool"`
	Name       string               `json:"name"`
	State      switchboard.PinState `json:"state"`
	Held       bool                 `json:"held"`
	Fields     []string             `json:"fields,omitempty"`
	Suspicious []string             `json:"suspicious,omitempty"`
	PinnedAt   *time.Time           `json:"pinnedAt,omitempty"`
	FirstUse   bool                 `json:"firstUse,omitempty"`
	Error      string               `json:"error,omitempty"`
	Approve    string               `json:"approve,omitempty"`
}

func (r *pinsRun) toolJSON(tp switchboard.ToolPin) toolPinJSON {
	j := toolPinJSON{Tool: tp.Tool, Name: tp.Name, State: tp.State, Held: tp.Held, Fields: tp.Fields, Suspicious: tp.Suspicious,
		FirstUse: r.firstUse(tp), Approve: tp.Approve}
	if !tp.PinnedAt.IsZero() {
		at := tp.PinnedAt.UTC()
		j.PinnedAt = &at
	}
	if tp.Err != nil {
		j.Error = tp.Err.Error()
	}
	return j
}

// list prints every server's tools against their pins.
func (r *pinsRun) list(asJSON bool) error {
	path, ferr := r.m.PinsFile()
	byServer := map[string][]switchboard.ToolPin{}
	for _, tp := range r.pins() {
		byServer[tp.Server] = append(byServer[tp.Server], tp)
	}
	var failure error
	if n := r.down(); n > 0 {
		failure = fmt.Errorf("%s under pinning not connected: %s not checked", count(n, "server"), itsTheir(n))
	}
	if ferr := r.fileError(); ferr != nil {
		failure = errors.Join(ferr, failure)
	}
	if asJSON {
		out := pinsJSON{File: path, Servers: []pinsServerJSON{}}
		if ferr != nil {
			out.FileError = ferr.Error()
		}
		for _, s := range r.st {
			sj := pinsServerJSON{Name: s.Name, Pinning: s.Pinning, State: s.State.String(), Tools: []toolPinJSON{}}
			if s.Rejected {
				sj.Pinning = ""
			}
			sj.Checked = r.unchecked(s) == ""
			if s.Err != nil {
				sj.Error = s.ErrorText()
			}
			for _, tp := range byServer[s.Name] {
				sj.Tools = append(sj.Tools, r.toolJSON(tp))
			}
			out.Servers = append(out.Servers, sj)
		}
		if err := writeJSON(r.stdout, out); err != nil {
			return err
		}
		return failure
	}
	switch {
	case path == "" && ferr == nil:
		fmt.Fprintln(r.stdout, `Tool pinning is off for every server (the config's "pinning" is "off").`)
	case ferr != nil:
		fmt.Fprintf(r.stdout, "Pins file: %s (CANNOT BE READ: %s)\n", printableLine(path), printableLine(ferr.Error()))
	default:
		fmt.Fprintf(r.stdout, "Pins file: %s\n", printableLine(path))
	}
	tw := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
	rows, notPinned := 0, 0
	var first *switchboard.ToolPin // the first tool an approval would pin
	for _, s := range r.st {
		for _, tp := range byServer[s.Name] {
			if rows == 0 {
				fmt.Fprintln(tw, "\nSERVER\tTOOL\tSTATE\tPINNED\tNOTES")
			}
			rows++
			if tp.Approve != "" {
				notPinned++
				if first == nil {
					first = &tp
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printableLine(tp.Server), printableLine(tp.Tool), tp.State, r.pinnedAt(tp), printableLine(pinNotes(tp)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var lines []string
	for _, s := range r.st {
		if why := r.unchecked(s); why != "" {
			lines = append(lines, printableLine(s.Name+": "+why))
		} else if len(byServer[s.Name]) == 0 {
			lines = append(lines, printableLine(s.Name+": lists no tools"))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(r.stdout, "\n%s\n", strings.Join(lines, "\n"))
	}
	if first != nil {
		// Commands for one of them, as an example: TOOL, SERVER and --all
		// work alike.
		approve := first.Approve
		diff := withoutPin(approve)
		fmt.Fprintf(r.stdout, "\n%s not as pinned. See what changed, and approve it, with (SERVER/TOOL, SERVER or --all):\n  %s\n  %s\n",
			count(notPinned, "tool"), printableLine(diff), printableLine(approve))
	}
	return failure
}

func itsTheir(n int) string {
	if n == 1 {
		return "its tools were"
	}
	return "their tools were"
}

// pinnedAt says when tp was pinned, for a table.
func (r *pinsRun) pinnedAt(tp switchboard.ToolPin) string {
	switch {
	case r.firstUse(tp):
		return "just now (first use)"
	case tp.PinnedAt.IsZero():
		return "-"
	}
	return tp.PinnedAt.UTC().Format("2006-01-02 15:04:05Z")
}

// pinNotes says, for a table, what is not as pinned about tp.
func pinNotes(tp switchboard.ToolPin) string {
	var notes []string
	if tp.Held {
		notes = append(notes, "HELD")
	}
	switch tp.State {
	case switchboard.PinChanged:
		notes = append(notes, "changed: "+strings.Join(tp.Fields, ", "))
	case switchboard.PinNew:
		notes = append(notes, "not pinned")
	case switchboard.PinRemoved:
		notes = append(notes, "no longer listed")
	case switchboard.PinDuplicate:
		notes = append(notes, "listed twice: cannot be pinned")
	}
	if tp.Err != nil {
		notes = append(notes, tp.Err.Error())
	}
	if len(tp.Suspicious) > 0 {
		notes = append(notes, "!! suspicious")
	}
	return strings.Join(notes, "; ")
}

// diffJSON is one tool of 'switchboard pins diff --json'.
type diffJSON struct {
	Server     string               `json:"server"`
	Tool       string               `json:"tool"`
	Name       string               `json:"name"`
	State      switchboard.PinState `json:"state"`
	Held       bool                 `json:"held"`
	Suspicious []string             `json:"suspicious,omitempty"`
	// Change is what changed, field by field, for a changed tool.
	Change *pins.Change `json:"change,omitempty"`
	// Pinned and Listed are the pinned definition and the one listed now,
	// when there are.
	Pinned  *pins.Definition `json:"pinned,omitempty"`
	Listed  *pins.Definition `json:"listed,omitempty"`
	Error   string           `json:"error,omitempty"`
	Approve string           `json:"approve,omitempty"`
}

// diff prints each change of the tools that targets name (all if none),
// field by field.
func (r *pinsRun) diff(targets []string, asJSON bool) error {
	var errs []error
	if ferr := r.fileError(); ferr != nil {
		errs = append(errs, ferr)
	}
	tps := r.pins()
	for _, t := range targets {
		server, tool, one := r.split(t)
		s, _ := r.st.Server(server)
		if why := r.unchecked(s); why != "" {
			errs = append(errs, fmt.Errorf("pins diff %q: server %q: %s", t, server, why))
			continue
		}
		if one && !slices.ContainsFunc(tps, func(tp switchboard.ToolPin) bool { return tp.Server == server && tp.Tool == tool }) {
			errs = append(errs, fmt.Errorf("pins diff %q: server %q neither lists nor pinned a tool %q", t, server, tool))
		}
	}
	if len(targets) == 0 && r.down() > 0 {
		for _, s := range r.st {
			if s.Pinning != config.PinningOff && s.State != switchboard.StateDisabled && s.State != switchboard.StateConnected {
				errs = append(errs, fmt.Errorf("pins diff: server %q: %s", s.Name, r.unchecked(s)))
			}
		}
	}
	var shown []switchboard.ToolPin
	for _, tp := range tps {
		if tp.State != switchboard.PinPinned && r.matches(targets, tp) {
			shown = append(shown, tp)
		}
	}
	if asJSON {
		out := make([]diffJSON, 0, len(shown))
		for _, tp := range shown {
			out = append(out, r.diffJSON(tp))
		}
		if err := writeJSON(r.stdout, out); err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	if len(shown) == 0 && len(errs) == 0 {
		what := "every tool"
		if len(targets) > 0 {
			what = strings.Join(targets, ", ")
		}
		fmt.Fprintf(r.stdout, "No changes: %s as pinned.\n", isAsPinned(what, len(targets)))
		return nil
	}
	for i, tp := range shown {
		if i > 0 {
			fmt.Fprintln(r.stdout)
		}
		r.printDiff(r.stdout, tp)
	}
	return errors.Join(errs...)
}

func isAsPinned(what string, n int) string {
	if n > 1 {
		return what + " are"
	}
	return what + " is"
}

// matches reports whether targets (SERVER or SERVER/TOOL) name tp; no
// target names every tool.
func (r *pinsRun) matches(targets []string, tp switchboard.ToolPin) bool {
	if len(targets) == 0 {
		return true
	}
	for _, t := range targets {
		server, tool, one := r.split(t)
		if server == tp.Server && (!one || tool == tp.Tool) {
			return true
		}
	}
	return false
}

// definitions returns the pinned and listed definitions of tp, nil where
// there is none or it cannot be made.
func definitions(tp switchboard.ToolPin) (pinned, listed *pins.Definition) {
	def := func(t *mcp.Tool) *pins.Definition {
		if t == nil {
			return nil
		}
		d, _, err := pins.NewDefinition(t)
		if err != nil {
			return nil
		}
		return &d
	}
	return def(tp.Pinned), def(tp.Listed)
}

func (r *pinsRun) diffJSON(tp switchboard.ToolPin) diffJSON {
	j := diffJSON{Server: tp.Server, Tool: tp.Tool, Name: tp.Name, State: tp.State, Held: tp.Held, Suspicious: tp.Suspicious,
		Approve: tp.Approve}
	j.Pinned, j.Listed = definitions(tp)
	if j.Pinned != nil && j.Listed != nil {
		c := pins.Compare(*j.Pinned, *j.Listed)
		j.Change = &c
	}
	if tp.Err != nil {
		j.Error = tp.Err.Error()
	}
	return j
}

// printDiff prints the change of one tool.
func (r *pinsRun) printDiff(w io.Writer, tp switchboard.ToolPin) {
	head := fmt.Sprintf("%s/%s: %s", tp.Server, tp.Tool, tp.State)
	if tp.Held {
		head += " (HELD: calls are refused until it is approved)"
	}
	fmt.Fprintln(w, visible(head))
	for _, s := range tp.Suspicious {
		fmt.Fprintf(w, "  !! suspicious: %s\n", visible(s))
	}
	pinned, listed := definitions(tp)
	switch {
	case tp.Err != nil:
		fmt.Fprintf(w, "  %s\n", visible(tp.Err.Error()))
	case tp.State == switchboard.PinNew && listed != nil:
		fmt.Fprintln(w, "  a tool without a pin; its definition:")
		writeIndented(w, listed, "    ")
	case tp.State == switchboard.PinRemoved:
		fmt.Fprintln(w, "  the server no longer lists it; approving forgets its pin")
	case pinned != nil && listed != nil:
		printChange(w, pins.Compare(*pinned, *listed))
	}
	if cmd := tp.Approve; cmd != "" {
		fmt.Fprintf(w, "  approve with: %s\n", visible(cmd))
	}
}

// printChange prints c field by field.
func printChange(w io.Writer, c pins.Change) {
	if slices.Contains(c.Fields, pins.FieldName) {
		fmt.Fprintln(w, "  name: changed")
	}
	for _, tc := range []struct {
		field string
		c     *pins.TextChange
	}{{pins.FieldTitle, c.Title}, {pins.FieldDescription, c.Description}} {
		if tc.c == nil {
			continue
		}
		fmt.Fprintf(w, "  %s:\n", tc.field)
		for _, l := range lineDiff(tc.c.Old, tc.c.New) {
			fmt.Fprintf(w, "    %s\n", visible(l))
		}
	}
	for _, sc := range []struct {
		field string
		c     *pins.SchemaChange
	}{{pins.FieldInputSchema, c.InputSchema}, {pins.FieldOutputSchema, c.OutputSchema}} {
		if sc.c == nil {
			continue
		}
		fmt.Fprintf(w, "  %s:\n", sc.field)
		s := sc.c
		switch {
		case s.Added:
			fmt.Fprintln(w, "    added (it had none)")
		case s.Removed:
			fmt.Fprintln(w, "    removed")
		}
		for _, l := range []struct {
			what  string
			names []string
		}{
			{"properties added", s.Properties.Added},
			{"properties removed", s.Properties.Removed},
			{"properties changed", s.Properties.Changed},
			{"required added", s.RequiredAdded},
			{"required removed", s.RequiredRemoved},
			{"keywords changed", s.Keywords},
		} {
			if len(l.names) > 0 {
				fmt.Fprintf(w, "    %s: %s\n", l.what, visible(strings.Join(l.names, ", ")))
			}
		}
	}
	if len(c.Hints) > 0 || slices.Contains(c.Fields, pins.FieldAnnotations) {
		fmt.Fprintln(w, "  annotations:")
	}
	for _, h := range c.Hints {
		line := fmt.Sprintf("    %s: %s -> %s", h.Hint, h.Old, h.New)
		if h.Hint == "title" {
			line = fmt.Sprintf("    title: %q -> %q", h.Old, h.New)
		}
		if (h.Hint == "readOnlyHint" || h.Hint == "idempotentHint") && h.New == "true" && h.Old != "true" {
			line += "  !! now true: safe replay trusts it to run a call twice (until approved, the pinned value is used)"
		}
		fmt.Fprintln(w, visible(line))
	}
}

// writeIndented writes v as indented JSON, each line after prefix.
func writeIndented(w io.Writer, v any, prefix string) {
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		fmt.Fprintf(w, "%s[cannot encode: %v]\n", prefix, err)
		return
	}
	for l := range strings.Lines(prefix + string(b)) {
		fmt.Fprintln(w, visible(strings.TrimSuffix(l, "\n")))
	}
}

// maxDiffCells bounds the work of lineDiff: past it (two texts of over a
// thousand lines each), the diff shows every old line removed and every
// new one added.
const maxDiffCells = 1 << 20

// lineDiff returns the lines of old and new as a diff: common lines after
// "  ", removed ones after "- ", added ones after "+ ". A text that does
// not end with a newline ends with its last line all the same.
func lineDiff(old, new string) []string {
	a, b := splitLines(old), splitLines(new)
	// Common head and tail first: a description that changed in one
	// place costs a little.
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var out []string
	for _, l := range a[:head] {
		out = append(out, "  "+l)
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	if len(ma)*len(mb) > maxDiffCells {
		for _, l := range ma {
			out = append(out, "- "+l)
		}
		for _, l := range mb {
			out = append(out, "+ "+l)
		}
	} else {
		out = append(out, lcsDiff(ma, mb)...)
	}
	for _, l := range a[len(a)-tail:] {
		out = append(out, "  "+l)
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lcsDiff diffs a and b by their longest common subsequence of lines.
func lcsDiff(a, b []string) []string {
	// lcs[i][j] is the length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case j == len(b) || i < len(a) && lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}

// visible is printableLine that also shows the characters a reader cannot
// see (zero-width, format and tag characters) as \u escapes: the diff of a
// description is where they must show.
func visible(s string) string {
	s = printableLine(s)
	if !strings.ContainsFunc(s, invisibleRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !invisibleRune(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func invisibleRune(r rune) bool { return unicode.Is(unicode.Cf, r) }

// approve pins what the servers that targets name (all if none) list now,
// and prints what it pinned.
func (r *pinsRun) approve(ctx context.Context, targets []string) error {
	// A server that is not connected has no list to approve: the library
	// would take its empty list for every tool removed.
	var errs []error
	var ready []string
	if len(targets) == 0 {
		for _, s := range r.st {
			switch why := r.unchecked(s); {
			case why == "":
				ready = append(ready, s.Name)
			case s.Pinning != config.PinningOff && s.State != switchboard.StateDisabled && !s.Rejected:
				errs = append(errs, fmt.Errorf("pins approve: server %q: %s", s.Name, why))
			}
		}
		if len(ready) == 0 && len(errs) == 0 {
			fmt.Fprintln(r.stdout, "Nothing to approve: no server is under pinning.")
			return nil
		}
	}
	for _, t := range targets {
		server, _, _ := r.split(t)
		s, known := r.st.Server(server)
		if known && s.State != switchboard.StateConnected && !s.Rejected && s.Pinning != config.PinningOff {
			errs = append(errs, fmt.Errorf("pins approve %q: server %q: %s", t, server, r.unchecked(s)))
			continue
		}
		ready = append(ready, t)
	}
	var approved []switchboard.ToolPin
	var err error
	if len(ready) > 0 {
		approved, err = r.m.ApprovePins(ctx, ready...)
	}
	err = errors.Join(append(errs, err)...)
	path, _ := r.m.PinsFile()
	// The tools of the whole servers approved that were as pinned already.
	whole := map[string]bool{}
	for _, t := range ready {
		if server, _, one := r.split(t); !one {
			whole[server] = true
		}
	}
	already := 0
	for _, tp := range r.m.Pins() {
		if whole[tp.Server] && tp.State == switchboard.PinPinned {
			already++
		}
	}
	for _, tp := range approved {
		if whole[tp.Server] && tp.State != switchboard.PinRemoved {
			already--
		}
		switch tp.State {
		case switchboard.PinRemoved:
			fmt.Fprintf(r.stdout, "forgot   %s (was removed: the server no longer lists it)\n", visible(tp.Server+"/"+tp.Tool))
		default:
			fmt.Fprintf(r.stdout, "approved %s (was %s)\n", visible(tp.Server+"/"+tp.Tool), tp.State)
		}
	}
	if already > 0 {
		fmt.Fprintf(r.stdout, "%s already as pinned\n", count(already, "tool"))
	}
	if len(approved) > 0 && path != "" {
		fmt.Fprintf(r.stdout, "Pins file: %s\n", printableLine(path))
	}
	if err == nil && len(approved) == 0 {
		fmt.Fprintln(r.stdout, "Nothing to approve: what was named is already as pinned, or not listed.")
	}
	return err
}

// configNames returns the names of cfg's servers, rejected ones included.
func configNames(cfg *config.Config) []string {
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	for _, r := range cfg.Rejected {
		names = append(names, r.Name)
	}
	return names
}

// split splits a target of the pins verbs, SERVER[/TOOL][@PIN], against
// the config's servers; one reports a tool. The pin is the library's to
// check.
func (r *pinsRun) split(t string) (server, tool string, one bool) {
	server, tool, _, one = pins.SplitTarget(t, configNames(r.cfg))
	return server, tool, one
}

// resolve returns targets with each tool named by its public name (as
// lists show it) named by its server and its name there, as the rest
// expects; a name that is neither is an error of op.
func (r *pinsRun) resolve(targets []string, op string) ([]string, error) {
	names := configNames(r.cfg)
	out := slices.Clone(targets)
	for i, t := range targets {
		server, _, pin, one := pins.SplitTarget(t, names)
		if one || slices.Contains(names, server) {
			continue
		}
		j := slices.IndexFunc(r.m.Pins(), func(tp switchboard.ToolPin) bool { return tp.Name == server })
		if j < 0 {
			return nil, fmt.Errorf("%s: %q: %w (the config has %s), nor a tool of that name", op, server, switchboard.ErrUnknownServer, serverNames(r.cfg))
		}
		tp := r.m.Pins()[j]
		out[i] = tp.Server + "/" + tp.Tool
		if pin != "" {
			out[i] += "@" + pin
		}
	}
	return out, nil
}

// withoutPin returns the approve command cmd as the diff command of the
// same tool, which takes no pin.
func withoutPin(cmd string) string {
	const approve, diff = "switchboard pins approve ", "switchboard pins diff "
	if !strings.HasPrefix(cmd, approve) {
		return cmd
	}
	target, rest, flags := strings.Cut(strings.TrimPrefix(cmd, approve), " --config ")
	quoted := strings.HasPrefix(target, "'") && strings.HasSuffix(target, "'") && len(target) > 1
	bare := strings.Trim(target, "'")
	if i := strings.LastIndexByte(bare, '@'); i >= 0 && pinHex.MatchString(bare[i+1:]) {
		target = bare[:i]
		if quoted {
			target = "'" + target + "'"
		}
	}
	if flags {
		rest = " --config " + rest
	}
	return diff + target + rest
}

// pinHex is the pin an approve command names.
var pinHex = regexp.MustCompile(`^[0-9a-f]{8,64}$`)
