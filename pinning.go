package switchboard

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
	"github.com/switchboard-mcp/switchboard/internal/fifo"
	"github.com/switchboard-mcp/switchboard/internal/pins"
	"github.com/switchboard-mcp/switchboard/internal/shell"
)

// PinState is how a tool stands against its pin (see Options.Pinning).
type PinState string

// The states of a tool under pinning.
const (
	// PinPinned is a tool listed as it was pinned.
	PinPinned PinState = "pinned"
	// PinChanged is a tool whose definition differs from its pin.
	PinChanged PinState = "changed"
	// PinNew is a tool listed by a server whose tools are pinned, without
	// a pin of its own.
	PinNew PinState = "new"
	// PinRemoved is a pinned tool that its server no longer lists.
	PinRemoved PinState = "removed"
	// PinDuplicate is a tool whose name the server lists twice: which of
	// the two a call reaches is unknown, so neither can be pinned.
	PinDuplicate PinState = "duplicate"
	// PinInvalid is a tool too large or nested too deep to pin.
	PinInvalid PinState = "invalid"
	// PinUnchecked is a tool of a server whose pins cannot be read: the
	// pins file is corrupt, unreadable or of a newer version.
	PinUnchecked PinState = "unchecked"
)

// ToolPin is how one tool stands against its pin.
type ToolPin struct {
	Server string
	// Tool is the tool's name on its server; Name its public name (as it
	// is exposed, or would be).
	Tool, Name string
	State      PinState
	// Held reports a tool that is not exposed until a person approves it
	// (the server's pinning mode is enforce).
	Held bool
	// Fields are the fields of a changed tool that differ from its pin:
	// name, title, description, inputSchema, outputSchema, annotations.
	Fields []string
	// Suspicious says why a changed or new description looks like an
	// instruction to the model (a tag such as <IMPORTANT>, "ignore
	// previous", a path under a home directory, invisible characters): a
	// signal for a person, never a reason to hold a tool by itself.
	Suspicious []string
	// Pinned is the pinned definition, for a changed or removed tool;
	// Listed the one the server lists now (nil for a removed tool). Both
	// are copies.
	Pinned, Listed *mcp.Tool
	// PinnedAt is when the tool was pinned; zero for a tool without a pin.
	PinnedAt time.Time
	// Err says why an invalid tool cannot be pinned, or an unchecked one
	// checked.
	Err error
	// Approve is the command line that pins the tool as it is listed now,
	// naming its pin (srv/tool@pin), so that it approves this definition
	// and no later one; "" when approving cannot help (a duplicate, an
	// invalid or an unchecked tool, or a server not pinned yet).
	Approve string

	pin        string // the listed definition's pin
	replayable bool   // the stricter of the pinned and listed hints let a call run twice
	// strict is the listed definition with the stricter of its pinned and
	// listed annotations, for a changed tool whose hints became laxer:
	// what warn exposes in its place, so that no client trusts a
	// readOnlyHint that a person never saw.
	strict *mcp.Tool
}

func (p ToolPin) clone() ToolPin {
	p.Fields = slices.Clone(p.Fields)
	p.Suspicious = slices.Clone(p.Suspicious)
	if p.Pinned != nil {
		p.Pinned = catalog.CloneTool(p.Pinned)
	}
	if p.Listed != nil {
		p.Listed = catalog.CloneTool(p.Listed)
	}
	return p
}

// ErrToolHeld means that a tool is held by tool pinning: its definition
// changed since a person trusted it, or it is new, and the server's pinning
// mode is enforce. See [HeldToolError].
var ErrToolHeld = errors.New("held until a person approves its definition")

// ErrPinningOff means that a server's tools are not pinned: its pinning
// mode is off.
var ErrPinningOff = errors.New("tool pinning is off")

// A HeldToolError is the error of a call of a held tool: nothing reached
// the server.
type HeldToolError struct {
	ToolPin
}

func (e *HeldToolError) Error() string {
	var why, then string
	switch e.State {
	case PinChanged:
		why = fmt.Sprintf("server %q changed its definition of %q since it was pinned (%s)", e.Server, e.Tool, strings.Join(e.Fields, ", "))
	case PinNew:
		why = fmt.Sprintf("server %q listed %q after its tools were pinned", e.Server, e.Tool)
	case PinDuplicate:
		why, then = fmt.Sprintf("server %q lists two tools named %q", e.Server, e.Tool), "; it cannot be pinned until the server lists it once"
	case PinInvalid:
		why, then = fmt.Sprintf("server %q: %v", e.Server, e.Err), "; it cannot be pinned"
	default:
		why, then = fmt.Sprintf("server %q: the pins cannot be read: %v", e.Server, e.Err), "; repair or move the pins file"
	}
	if e.Approve != "" {
		then = "; if the change is trusted, a person approves it with: " + e.Approve
	}
	return fmt.Sprintf("tool %q is held: %s; the call was not sent%s", e.Name, why, then)
}

func (e *HeldToolError) Unwrap() error { return ErrToolHeld }

// pinner keeps the pins file of a manager, checks each server's tool list
// against it, and pins a server's tools on first use. The views hold what
// it found (a serverPins per server); it holds the file.
type pinner struct {
	logger *slog.Logger
	// changed queues a new view, after the file changed.
	changed func()
	writes  *fifo.Queue[firstUsePins] // servers pinned on first use, to save

	mu     sync.Mutex
	mode   config.PinningMode // the servers' default
	active bool               // some server's mode is not off
	path   string
	file   *pins.File // nil while err is set
	err    error      // why the file cannot be read
	sum    [sha256.Size]byte
	gen    uint64 // counts the changes of file
	memo   map[string]pinMemo
	logged map[pinLogKey]bool
	// pinned are the servers this pinner saw with pins: if their pins go
	// (the file is deleted, say), their tools are new, never pinned on
	// first use again while it runs, lest a held tool be trusted so.
	pinned map[string]bool
	// files are the config files, for the approve commands.
	files []string
	// writeErr is why the pins taken on first use could not be written.
	writeErr error
	// pending are the pins taken on first use and not written yet: a file
	// read meanwhile (after another server's were written) keeps them.
	pending map[string]*pins.Server
	// read is the file as last read, without the pending.
	read *pins.File
	// reading serializes the reads of the file: one that began earlier
	// must not install its content over a later one's.
	reading sync.Mutex
}

// maxPinLogKeys bounds the changes remembered as logged: a server that
// changes a tool at every list cannot grow it without end. Past it, the
// memory starts over, and a change may be logged again.
const maxPinLogKeys = 10_000

type pinLogKey struct {
	server, tool string
	state        PinState
	pin          string
}

type pinMemoKey struct {
	tools  **mcp.Tool // the list's backing array: lists are replaced, never changed
	n      int
	gen    uint64
	mode   config.PinningMode
	cached bool
}

type pinMemo struct {
	key  pinMemoKey
	pins *serverPins
}

// serverPins is how one server's listed tools stand against their pins.
// It is shared by views and never changed.
type serverPins struct {
	mode    config.PinningMode
	visible []*mcp.Tool // the tools to expose: all, less the held ones
	list    []*mcp.Tool // the tools checked, as listed
	at      []int32     // the index in tools of each of list's, -1 for nil
	// tools are the listed tools, then the removed ones; Name unset. They
	// are shared with later checks of the same definitions: never changed.
	tools []*ToolPin
	held  int // how many are held
	// loosened counts the tools exposed with stricter hints than listed.
	loosened int
	// pinnedListed counts the listed tools that have a pin.
	pinnedListed int
	// noReplay are the changed tools whose pinned and listed hints,
	// together, do not let a call run twice.
	noReplay map[string]bool
	// count is how often list has each name; shared, never changed.
	count map[string]int
	// byTool finds a definition's state wherever the list has it; made
	// when a later check first needs it, under the pinner's lock.
	byTool map[*mcp.Tool]*ToolPin
}

func newPinner(logger *slog.Logger) *pinner {
	p := &pinner{logger: logger, changed: func() {}, memo: map[string]pinMemo{}, logged: map[pinLogKey]bool{}, pinned: map[string]bool{}, pending: map[string]*pins.Server{}}
	p.writes = fifo.New(p.save)
	return p
}

// configure applies the pinning of cfg, over the host's defaults: the mode
// of the servers without their own, and the file. A new file is read.
func (p *pinner) configure(cfg *config.Config, defaults config.Pinning, lookupEnv func(string) (string, bool)) {
	mode := cmp.Or(cfg.Pinning.Mode, defaults.Mode, config.PinningOff)
	active := mode != config.PinningOff || slices.ContainsFunc(cfg.Servers, func(s config.Server) bool {
		return s.Pinning != "" && s.Pinning != config.PinningOff
	})
	var path string
	var err error
	if active {
		path, err = cfg.PinsFile(defaults.File, lookupEnv)
	}
	var files []string
	for _, f := range cfg.Files {
		if f != config.EmbeddedSource {
			files = append(files, f)
		}
	}
	p.reading.Lock()
	defer p.reading.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.active = mode, active
	if !slices.Equal(files, p.files) {
		p.files = files
		p.gen++ // the approve commands name them
	}
	if path == p.path && err == nil && (p.file != nil || p.err != nil) {
		return
	}
	p.path, p.sum = path, [sha256.Size]byte{}
	clear(p.pending) // taken for the file no longer followed
	clear(p.pinned)  // a file a person chose instead: its own first use
	switch {
	case !active:
		p.file, p.err = nil, nil
		p.gen++
	case err != nil:
		p.file, p.err = nil, err
		p.gen++
		p.logger.Error("tool pinning: no pins file; the tools of servers under enforce are held", "error", err)
	default:
		p.loadLocked()
	}
}

// modeOf returns the pinning mode of a server with config srv.
func (p *pinner) modeOf(srv config.Server) config.PinningMode {
	if srv.Pinning != "" {
		return srv.Pinning
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// pinsRead is what reading the pins file found.
type pinsRead struct {
	path string
	sum  [sha256.Size]byte
	file *pins.File // nil if err, or unchanged
	err  error
}

// read reads and parses the pins file at path, unless its content is the
// one whose hash is known (then file and err are nil). It takes no lock:
// a large file takes a while to check.
func readPins(path string, known [sha256.Size]byte) pinsRead {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = nil, nil
	}
	r := pinsRead{path: path, sum: sha256.Sum256(b)}
	switch {
	case err != nil:
		r.err = fmt.Errorf("pins file: %w", err) // *PathError names the file
	case r.sum == known:
	case b == nil:
		r.file = pins.New()
	default:
		r.file, r.err = pins.Parse(path, b)
	}
	return r
}

// loadLocked reads the file, and reports whether it changed since it was
// last read or written.
func (p *pinner) loadLocked() bool { return p.installLocked(readPins(p.path, p.knownSum())) }

// knownSum is the hash of the file as last read, if it could be read.
func (p *pinner) knownSum() [sha256.Size]byte {
	if p.file == nil {
		return [sha256.Size]byte{} // read it again, whatever it holds
	}
	return p.sum
}

// installLocked makes r the file, if it is of the file followed and
// changed, and reports whether it did.
func (p *pinner) installLocked(r pinsRead) bool {
	if r.path != p.path || r.err == nil && r.file == nil && p.file != nil && r.sum == p.sum {
		return false
	}
	p.sum = r.sum
	p.gen++
	f, err := r.file, r.err
	was := p.err
	p.file, p.err = f, err
	p.read = nil
	if f != nil {
		p.read = &pins.File{Servers: maps.Clone(f.Servers)} // as read, before the pending are merged
		for name := range f.Servers {
			p.pinned[name] = true
		}
		for name, pending := range p.pending {
			if f.Servers[name] == nil {
				f.Servers[name] = pending
			}
		}
	}
	switch {
	case err != nil && (was == nil || was.Error() != err.Error()):
		p.logger.Error("tool pinning: the pins file cannot be read; the tools of servers under enforce are held, and nothing is written to it",
			"file", p.path, "error", err)
	case err == nil && was != nil:
		p.logger.Info("tool pinning: the pins file can be read again", "file", p.path)
	}
	return true
}

// reload reads the file again, queues a new view if it changed, and
// returns why it cannot be read, if it cannot.
func (p *pinner) reload() error {
	p.reading.Lock()
	defer p.reading.Unlock()
	p.mu.Lock()
	active, path, known := p.active, p.path, p.knownSum()
	p.mu.Unlock()
	var r pinsRead
	if active {
		r = readPins(path, known)
	}
	p.mu.Lock()
	changed := active && p.installLocked(r)
	err := p.err
	p.mu.Unlock()
	if changed {
		p.changed()
	}
	return err
}

// pendingOf returns a copy of the pins taken for server and not written
// yet, or nil.
func (p *pinner) pendingOf(server string) *pins.Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.pending[server]; s != nil {
		return &pins.Server{Tools: maps.Clone(s.Tools)}
	}
	return nil
}

// state returns the pins file and why it cannot be read, or written.
func (p *pinner) state() (path string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.path, cmp.Or(p.err, p.writeErr)
}

// check returns how a server's listed tools stand against their pins, in
// mode (not off). cached says the tools came from the persistent cache,
// not from the server: they are checked, but not pinned on first use.
func (p *pinner) check(server, source string, mode config.PinningMode, tools []*mcp.Tool, cached bool) *serverPins {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := pinMemoKey{n: len(tools), gen: p.gen, mode: mode, cached: cached}
	if len(tools) > 0 {
		key.tools = &tools[0]
	}
	m, ok := p.memo[server]
	if ok && m.key == key {
		return m.pins
	}
	var prev *serverPins
	if ok && m.key.gen == key.gen && m.key.mode == mode && m.key.cached == cached {
		prev = m.pins // its tools were checked against the same pins
	}
	sp := p.checkLocked(server, source, mode, tools, cached, prev)
	key.gen = p.gen // pinning on first use changed the file
	p.memo[server] = pinMemo{key, sp}
	return sp
}

func (p *pinner) checkLocked(server, source string, mode config.PinningMode, tools []*mcp.Tool, cached bool, prev *serverPins) *serverPins {
	enforce := mode == config.PinningEnforce
	sp := &serverPins{mode: mode, visible: tools, list: tools, at: make([]int32, len(tools)), tools: make([]*ToolPin, 0, len(tools))}
	if p.file == nil {
		for i, t := range tools {
			sp.at[i] = -1
			if t != nil {
				sp.at[i] = int32(len(sp.tools))
				sp.tools = append(sp.tools, &ToolPin{Server: server, Tool: t.Name, State: PinUnchecked, Held: enforce, Listed: t, Err: p.err})
			}
		}
		if enforce {
			sp.visible, sp.held = nil, len(sp.tools)
		}
		return sp
	}
	firstUse := p.file.Servers[server] == nil && !p.pinned[server]
	switch {
	case firstUse && !cached && slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t != nil }):
		p.pinOnFirstUse(server, tools)
		prev, firstUse = nil, false
	case p.file.Servers[server] == nil && p.pinned[server]:
		// Its pins went (the file was deleted, say): it is written back
		// with none, so that no process pins its tools on first use, as
		// they are now, without a person.
		p.file.Servers[server] = &pins.Server{Tools: map[string]pins.Entry{}}
		p.pending[server] = p.file.Servers[server]
		p.gen++
		p.logger.Warn("tool pinning: a pinned server's pins are gone from the pins file; its tools are new until approved", "server", server, "file", p.path)
		p.writes.Push(firstUsePins{p.path, server})
	}
	if p.file.Servers[server] != nil {
		p.pinned[server] = true
	}
	if firstUse {
		// Tools from the cache, of a server that has not listed its own
		// yet: the first it lists will be pinned, whatever these are.
		for i, t := range tools {
			sp.at[i] = -1
			if t != nil {
				sp.at[i] = int32(len(sp.tools))
				sp.tools = append(sp.tools, &ToolPin{Server: server, Tool: t.Name, State: PinNew, Listed: t})
			}
		}
		return sp
	}
	// The definitions of prev, by position: a refresh lists most of them
	// again, at the same place. A list with another name at any place
	// needs its names counted again, for a tool listed twice.
	renamed := prev == nil || len(prev.list) != len(tools)
	for i := 0; !renamed && i < len(tools); i++ {
		t, was := tools[i], prev.list[i]
		renamed = t != was && (t == nil || was == nil || t.Name != was.Name)
	}
	if renamed {
		sp.count = make(map[string]int, len(tools))
		for _, t := range tools {
			if t != nil {
				sp.count[t.Name]++
			}
		}
	} else {
		sp.count = prev.count // the same names at the same places
	}
	count := sp.count
	for i, t := range tools {
		sp.at[i] = -1
		if t == nil {
			continue
		}
		var tp *ToolPin
		if prev != nil {
			tp = prev.find(i, t)
		}
		twice := count[t.Name] > 1
		if tp == nil || twice != (tp.State == PinDuplicate) {
			if twice {
				tp = &ToolPin{Server: server, Tool: t.Name, State: PinDuplicate, Listed: t}
			} else {
				tp = p.checkTool(server, t)
			}
			tp.Held = enforce && tp.State != PinPinned
			p.logChange(tp)
		}
		if tp.Held {
			sp.held++
		}
		if tp.strict != nil {
			sp.loosened++
		}
		if tp.State == PinChanged && !tp.replayable {
			if sp.noReplay == nil {
				sp.noReplay = make(map[string]bool)
			}
			sp.noReplay[t.Name] = true
		}
		if tp.State == PinPinned || tp.State == PinChanged {
			sp.pinnedListed++
		}
		sp.at[i] = int32(len(sp.tools))
		sp.tools = append(sp.tools, tp)
	}
	if s := p.file.Servers[server]; s != nil && len(s.Tools) > sp.pinnedListed {
		listed := make(map[string]bool, len(sp.tools))
		for _, tp := range sp.tools {
			listed[tp.Tool] = true
		}
		var removed []string
		for name := range s.Tools {
			if !listed[name] {
				removed = append(removed, name)
			}
		}
		slices.Sort(removed)
		for _, name := range removed {
			e := s.Tools[name]
			tp := &ToolPin{Server: server, Tool: name, State: PinRemoved, Pinned: e.Definition.Tool(), PinnedAt: e.PinnedAt}
			tp.Approve = p.approveCommand(tp)
			sp.tools = append(sp.tools, tp)
		}
	}
	if sp.held > 0 || sp.loosened > 0 {
		sp.visible = make([]*mcp.Tool, 0, len(tools)-sp.held)
		for i, t := range tools {
			switch {
			case sp.at[i] < 0:
				sp.visible = append(sp.visible, t)
			case sp.tools[sp.at[i]].Held:
			case sp.tools[sp.at[i]].strict != nil:
				sp.visible = append(sp.visible, sp.tools[sp.at[i]].strict)
			default:
				sp.visible = append(sp.visible, t)
			}
		}
	}
	return sp
}

// stricter returns t with the stricter of its annotations and pinned ones,
// hint by hint, or nil if t's are as strict: read-only and idempotent only
// if both say so; destructive and open-world unless both say not (unset
// means true).
func stricter(t *mcp.Tool, pinned *pins.Annotations) *mcp.Tool {
	var was mcp.ToolAnnotations
	if pinned != nil {
		was = mcp.ToolAnnotations{ReadOnlyHint: pinned.ReadOnlyHint, IdempotentHint: pinned.IdempotentHint,
			DestructiveHint: pinned.DestructiveHint, OpenWorldHint: pinned.OpenWorldHint}
	}
	var now mcp.ToolAnnotations
	if t.Annotations != nil {
		now = *t.Annotations
	}
	both := func(a, b *bool) *bool {
		if a != nil && b != nil && !*a && !*b {
			return a
		}
		if a != nil && *a || b != nil && *b {
			yes := true
			return &yes
		}
		return nil
	}
	strict := now
	strict.ReadOnlyHint = was.ReadOnlyHint && now.ReadOnlyHint
	strict.IdempotentHint = was.IdempotentHint && now.IdempotentHint
	strict.DestructiveHint = both(was.DestructiveHint, now.DestructiveHint)
	strict.OpenWorldHint = both(was.OpenWorldHint, now.OpenWorldHint)
	if strict.ReadOnlyHint == now.ReadOnlyHint && strict.IdempotentHint == now.IdempotentHint &&
		ptrBoolEqual(strict.DestructiveHint, now.DestructiveHint) && ptrBoolEqual(strict.OpenWorldHint, now.OpenWorldHint) {
		return nil
	}
	c := *t
	c.Annotations = &strict
	return &c
}

func ptrBoolEqual(a, b *bool) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// find returns the pin state sp found for t, listed at position i, if sp
// checked the same definition: at the same position, or anywhere. A new
// definition of the tool sp had at i, the usual change, is new anywhere.
func (sp *serverPins) find(i int, t *mcp.Tool) *ToolPin {
	if i < len(sp.list) && sp.list[i] == t {
		return sp.tools[sp.at[i]]
	}
	if i < len(sp.list) && sp.list[i] != nil && sp.list[i].Name == t.Name {
		return nil
	}
	if sp.byTool == nil {
		sp.byTool = make(map[*mcp.Tool]*ToolPin, len(sp.list))
		for j, u := range sp.list {
			if u != nil {
				sp.byTool[u] = sp.tools[sp.at[j]]
			}
		}
	}
	return sp.byTool[t]
}

// checkTool returns how t, listed once by server, stands against its pin.
func (p *pinner) checkTool(server string, t *mcp.Tool) *ToolPin {
	r := p.file.CheckTool(server, t)
	tp := &ToolPin{Server: server, Tool: t.Name, State: pinStates[r.State], Listed: t, pin: r.Pin}
	defer func() { tp.Approve = p.approveCommand(tp) }()
	e, pinned := p.file.Lookup(server, t.Name)
	if pinned {
		tp.PinnedAt = e.PinnedAt
	}
	switch tp.State {
	case PinChanged:
		tp.Pinned = e.Definition.Tool()
		tp.strict = stricter(t, e.Definition.Annotations)
		strict := t
		if tp.strict != nil {
			strict = tp.strict
		}
		tp.replayable = strict.Annotations != nil && (strict.Annotations.ReadOnlyHint || strict.Annotations.IdempotentHint)
		tp.Fields = pins.Compare(e.Definition, r.Definition).Fields
		tp.Suspicious = pins.Suspicious(e.Definition.Description, t.Description)
		tp.Suspicious = append(tp.Suspicious, laxerHints(tp.strict, t)...)
	case PinNew:
		tp.Suspicious = pins.Suspicious("", t.Description)
	case PinInvalid:
		tp.Err = r.Err
	}
	return tp
}

// approveCommand returns tp's Approve.
func (p *pinner) approveCommand(tp *ToolPin) string {
	target := tp.Server + "/" + tp.Tool
	switch tp.State {
	case PinChanged, PinNew:
		target += "@" + shortPin(tp.pin)
	case PinRemoved:
	default:
		return ""
	}
	return shell.Command("pins approve", p.files, target)
}

// shortPinLen is how much of a pin an approve command names: 64 bits, more
// than a server could match by trying definitions.
const shortPinLen = 16

func shortPin(pin string) string { return pin[:min(len(pin), shortPinLen)] }

var pinStates = [...]PinState{
	pins.StatePinned: PinPinned, pins.StateChanged: PinChanged, pins.StateNew: PinNew,
	pins.StateRemoved: PinRemoved, pins.StateDuplicate: PinDuplicate, pins.StateInvalid: PinInvalid,
}

// pinOnFirstUse pins the tools of a server that has no pins (trust on
// first use), and queues the file's update.
func (p *pinner) pinOnFirstUse(server string, tools []*mcp.Tool) {
	p.file.Servers[server] = &pins.Server{Tools: map[string]pins.Entry{}}
	p.pending[server] = p.file.Servers[server]
	now := time.Now()
	seen := make(map[string]int, len(tools))
	for _, t := range tools {
		if t != nil {
			seen[t.Name]++
		}
	}
	n := 0
	for _, t := range tools {
		if t != nil && seen[t.Name] == 1 && p.file.Set(server, t, now) == nil {
			n++
		}
	}
	p.gen++
	p.logger.Info("tool pinning: tools pinned on first use", "server", server, "tools", n, "file", p.path)
	p.writes.Push(firstUsePins{p.path, server})
}

// firstUsePins names a server pinned on first use, and the pins file.
type firstUsePins struct{ path, server string }

// save writes the pins of servers pinned on first use to the file, under
// its lock, leaving alone a server that another process pinned in the
// meantime, then reads the file back.
func (p *pinner) save(batch []firstUsePins) {
	p.mu.Lock()
	path := p.path
	ours := make(map[string]*pins.Server, len(batch))
	taken := make(map[string]*pins.Server, len(batch))
	for _, w := range batch {
		// Pins taken for a file no longer followed are not its.
		if s := p.pending[w.server]; w.path == path && s != nil {
			ours[w.server] = &pins.Server{Tools: maps.Clone(s.Tools)}
			taken[w.server] = s
		}
	}
	p.mu.Unlock()
	if path == "" || len(ours) == 0 {
		return
	}
	err := pins.Update(path, func(f *pins.File) error {
		for name, s := range ours {
			if f.Servers[name] == nil {
				f.Servers[name] = s
			}
		}
		return nil
	})
	p.mu.Lock()
	p.writeErr = nil
	if err != nil {
		p.writeErr = fmt.Errorf("%w; the pins taken on first use are kept in memory only, until the next start", err)
	}
	p.mu.Unlock()
	if err != nil {
		p.logger.Error("tool pinning: the pins file was not written; the pins taken on first use are kept in memory only", "file", path, "error", err)
		return
	}
	_ = p.reload() // its errors are logged
	// Pending no more once the file read back has them: a read that
	// began before the write may have been installed meanwhile.
	p.mu.Lock()
	for name, s := range taken {
		if p.pending[name] == s && p.read != nil && p.read.Servers[name] != nil {
			delete(p.pending, name)
		}
	}
	p.mu.Unlock()
}

// logChange logs a tool that is not as pinned, once for each definition.
func (p *pinner) logChange(tp *ToolPin) {
	var msg string
	switch tp.State {
	case PinChanged:
		msg = "tool pinning: a tool's definition changed since it was pinned"
	case PinNew:
		msg = "tool pinning: a new tool on a server whose tools are pinned"
	case PinDuplicate:
		msg = "tool pinning: a server lists two tools of one name; neither can be pinned"
	case PinInvalid:
		msg = "tool pinning: a tool cannot be pinned"
	default:
		return
	}
	key := pinLogKey{tp.Server, tp.Tool, tp.State, tp.pin}
	if p.logged[key] {
		return
	}
	if len(p.logged) >= maxPinLogKeys {
		clear(p.logged)
	}
	p.logged[key] = true
	attrs := []any{"server", tp.Server, "tool", tp.Tool, "held", tp.Held}
	if len(tp.Fields) > 0 {
		attrs = append(attrs, "fields", tp.Fields)
	}
	if len(tp.Suspicious) > 0 {
		attrs = append(attrs, "suspicious", tp.Suspicious)
	}
	if tp.Err != nil {
		attrs = append(attrs, "error", tp.Err)
	}
	if tp.Approve != "" {
		attrs = append(attrs, "approve", tp.Approve)
	}
	p.logger.Warn(msg, attrs...)
}

// close writes what is queued and stops.
func (p *pinner) close() { p.writes.Close() }

// heldChanges returns an EventHeld for each server whose held tools differ
// between two views, in configured order.
func heldChanges(before, after *view) []Event {
	byServer := make(map[string]*Diff)
	diffNamed(heldNames(before), heldNames(after), func(n named, added bool) {
		d := byServer[n.server]
		if d == nil {
			d = &Diff{}
			byServer[n.server] = d
		}
		if added {
			d.Added = append(d.Added, n.name)
		} else {
			d.Removed = append(d.Removed, n.name)
		}
	})
	var out []Event
	for _, up := range after.servers {
		if d := byServer[up.Name()]; d != nil {
			out = append(out, Event{Kind: EventHeld, At: time.Now(), Server: up.Name(), Tools: *d})
		}
	}
	return out
}

// heldNames returns the held tools of v, sorted by public name.
func heldNames(v *view) []named {
	out := make([]named, 0, len(v.held))
	for name, h := range v.held {
		out = append(out, named{name, h.server})
	}
	slices.SortFunc(out, func(a, b named) int { return strings.Compare(a.name, b.name) })
	return out
}

// heldError is the error of a call of the held tool h for q: unknown, if
// Options.Filter hides it from q, which may not learn of it.
func (m *Manager) heldError(ctx context.Context, q *Query, v *view, h heldTool) error {
	tp := v.named(h.server, []ToolPin{v.pins[h.server].tools[h.i].clone()})[0]
	if keep := m.toolFilter(q); keep != nil && tp.Listed != nil {
		named := *tp.Listed
		named.Name = tp.Name
		t := Tool{Name: tp.Name, Server: tp.Server, Original: tp.Tool, def: &named}
		if len(catalog.Filter(ctx, []Tool{t}, "tool", func(t Tool) (string, string) { return t.Server, t.Original }, keep, m.opts.Logger)) == 0 {
			return m.unknownTool(ctx, q, tp.Name)
		}
	}
	return fmt.Errorf("call tool: %w", &HeldToolError{ToolPin: tp})
}

// Pins returns how the tools of every server under pinning stand against
// their pins (see Options.Pinning): each server in configured order, its
// listed tools in list order, then its removed ones. A server that is
// stopped, or whose pinning is off, has none.
func (m *Manager) Pins() []ToolPin {
	v := m.view.Load()
	var out []ToolPin
	for _, up := range v.servers {
		tps := v.shown(up.Name())
		for i := range tps {
			tps[i] = tps[i].clone()
		}
		out = append(out, v.named(up.Name(), tps)...)
	}
	return out
}

// PinsFile returns the pins file, and why it cannot be read if it cannot,
// or why the pins taken on first use could not be written to it; "" if no
// server's pinning is on. Pins taken on first use are written in the
// background: [Manager.ReloadPins] waits for them.
func (m *Manager) PinsFile() (string, error) { return m.pins.state() }

// ReloadPins reads the pins file again, as a gateway does when it changes:
// tools that now match their pins are released, with an EventHeld and an
// EventChanged, before it returns. It returns why the file cannot be read,
// if it cannot: then, until it can, every tool of a server under enforce is
// held, and under warn none is.
func (m *Manager) ReloadPins(ctx context.Context) error {
	if err := m.pins.writes.Flush(ctx); err != nil {
		return err
	}
	err := m.pins.reload()
	if ferr := m.events.Flush(ctx); ferr != nil {
		return ferr
	}
	return err
}

// ApprovePins pins the tools that the named servers list now, as they list
// them, in the pins file, and returns what it pinned: a target "server"
// pins all the server's tools (and forgets those it no longer lists),
// "server/tool" one tool (the name its server gives it; or the tool's
// public name), and "server/tool@pin" the tool only if its listed
// definition still has that pin (a prefix of it, as [ToolPin.Approve]
// names it), so that a person approves what they saw and not what the
// server lists a moment later. No target means every server under
// pinning: one that is disabled, or has listed no tools since it started,
// is an error then too. Held tools that now match their pins are released
// before it returns.
//
// A server that is not under pinning ([ErrPinningOff]), or has not listed
// its tools yet, is an error; so is a tool the server lists twice, or that
// is too large to pin, and a pin that is not the listed one: the other
// targets are pinned all the same.
func (m *Manager) ApprovePins(ctx context.Context, targets ...string) ([]ToolPin, error) {
	if err := m.open("approve pins", strings.Join(targets, " ")); err != nil {
		return nil, err
	}
	if err := m.events.Flush(ctx); err != nil {
		return nil, err
	}
	if err := m.pins.writes.Flush(ctx); err != nil { // the pins taken on first use first
		return nil, err
	}
	v := m.view.Load()
	if len(targets) == 0 {
		for _, up := range v.servers {
			if m.pins.modeOf(up.Config()) != config.PinningOff {
				targets = append(targets, up.Name())
			}
		}
	}
	plan := make(map[string][]ToolPin) // what to pin (or forget, if removed), by server
	var errs []error
	for _, target := range targets {
		tps, err := m.approvable(v, target)
		if err != nil {
			errs = append(errs, fmt.Errorf("approve pins of %q: %w", target, err))
		}
		for _, tp := range tps {
			plan[tp.Server] = append(plan[tp.Server], tp)
		}
	}
	var approved []ToolPin
	if len(plan) > 0 {
		path, _ := m.pins.state()
		now := time.Now()
		pending := make(map[string]*pins.Server)
		for server := range plan {
			pending[server] = m.pins.pendingOf(server) // not written: the file could not be
		}
		err := pins.Update(path, func(f *pins.File) error {
			for server, tps := range plan {
				if f.Servers[server] == nil {
					f.Servers[server] = cmp.Or(pending[server], &pins.Server{Tools: map[string]pins.Entry{}})
				}
				for _, tp := range tps {
					if tp.Listed == nil {
						delete(f.Servers[server].Tools, tp.Tool)
					} else if err := f.Set(server, tp.Listed, now); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, errors.Join(append(errs, fmt.Errorf("approve pins: %w", err))...)
		}
		for server, tps := range plan {
			approved = append(approved, v.named(server, cloneAll(tps))...)
			for _, tp := range tps {
				m.opts.Logger.Info("tool pinning: approved", "server", server, "tool", tp.Tool, "was", tp.State, "file", path)
			}
		}
		if err := m.ReloadPins(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	slices.SortFunc(approved, func(a, b ToolPin) int { return strings.Compare(a.Server+"/"+a.Tool, b.Server+"/"+b.Tool) })
	return approved, errors.Join(errs...)
}

// approvable returns the tools that target (see ApprovePins) pins in v:
// those not as pinned (a removed one, to forget), and why any it names
// cannot be pinned.
func (m *Manager) approvable(v *view, target string) ([]ToolPin, error) {
	server, tool, wantPin, one := pins.SplitTarget(target, slices.Collect(maps.Keys(v.byName)))
	exact := wantPin != ""
	if !one && v.byName[server] == nil {
		// A public name, as lists show it: the first server's, in
		// configured order, that has it.
	find:
		for _, up := range v.servers {
			for _, tp := range v.named(up.Name(), v.shown(up.Name())) {
				if tp.Name == server && tp.Listed != nil {
					server, tool, one = up.Name(), tp.Tool, true
					break find
				}
			}
		}
	}
	up := v.byName[server]
	switch {
	case up == nil:
		return nil, v.unknownServer("server", server)
	case m.pins.modeOf(up.Config()) == config.PinningOff:
		return nil, fmt.Errorf("%w for server %q", ErrPinningOff, server)
	case exact && !one:
		return nil, fmt.Errorf("a pin names one tool: want SERVER/TOOL@PIN")
	}
	sp := v.pins[server]
	if snap := up.Snapshot(); sp == nil || snap.Cached {
		return nil, fmt.Errorf("server %q has listed no tools since it started (state %s); approve once it is connected", server, snap.State)
	}
	var out []ToolPin
	var errs []error
	found := false
	for _, tp := range sp.tools {
		if one && tp.Tool != tool {
			continue
		}
		found = true
		switch {
		case tp.State == PinDuplicate:
			errs = append(errs, fmt.Errorf("server %q lists two tools named %q: neither can be pinned until it lists one", server, tp.Tool))
		case tp.State == PinInvalid || tp.State == PinUnchecked:
			errs = append(errs, fmt.Errorf("tool %q cannot be pinned: %w", tp.Tool, tp.Err))
		case exact && tp.Listed == nil:
			errs = append(errs, fmt.Errorf("server %q no longer lists tool %q: approve %s/%s, without a pin, to forget its pin", server, tp.Tool, server, tp.Tool))
		case exact && !strings.HasPrefix(tp.pin, wantPin):
			errs = append(errs, fmt.Errorf("server %q lists tool %q now with pin %s, not %s: it changed again; see switchboard pins diff %s/%s",
				server, tp.Tool, shortPin(tp.pin), wantPin, server, tp.Tool))
		case tp.State == PinPinned:
		default:
			out = append(out, *tp)
		}
	}
	if one && !found {
		errs = append(errs, fmt.Errorf("server %q neither lists nor pinned a tool %q", server, tool))
	}
	return out, errors.Join(errs...)
}

// shown returns the pin states of server's tools that its config's allow
// and deny lists let it expose: one it may never expose is neither held
// nor shown.
func (v *view) shown(server string) []ToolPin {
	sp := v.pins[server]
	if sp == nil {
		return nil
	}
	filter := v.byName[server].Config().Tools
	out := make([]ToolPin, 0, len(sp.tools))
	for _, tp := range sp.tools {
		if catalog.Allowed(tp.Tool, filter.Allow, filter.Deny) {
			out = append(out, *tp)
		}
	}
	return out
}

func cloneAll(tps []ToolPin) []ToolPin {
	out := make([]ToolPin, len(tps))
	for i, tp := range tps {
		out[i] = tp.clone()
	}
	return out
}

// laxerHints says which hints t lists laxer than the stricter definition
// strict (nil: none): what a client or safe replay would trust that no one
// approved.
func laxerHints(strict, t *mcp.Tool) []string {
	if strict == nil || t.Annotations == nil {
		return nil
	}
	s, l := strict.Annotations, t.Annotations
	var out []string
	if l.ReadOnlyHint && !s.ReadOnlyHint {
		out = append(out, "annotations: readOnlyHint became true")
	}
	if l.IdempotentHint && !s.IdempotentHint {
		out = append(out, "annotations: idempotentHint became true")
	}
	if l.DestructiveHint != nil && !*l.DestructiveHint && !ptrBoolEqual(s.DestructiveHint, l.DestructiveHint) {
		out = append(out, "annotations: destructiveHint became false")
	}
	if l.OpenWorldHint != nil && !*l.OpenWorldHint && !ptrBoolEqual(s.OpenWorldHint, l.OpenWorldHint) {
		out = append(out, "annotations: openWorldHint became false")
	}
	return out
}
