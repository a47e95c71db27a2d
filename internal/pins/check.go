package pins

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is how a tool stands against its pin.
type State int

const (
	// StatePinned is a tool whose definition matches its pin.
	StatePinned State = iota
	// StateChanged is a tool whose definition differs from its pin.
	StateChanged
	// StateNew is a listed tool that has no pin.
	StateNew
	// StateRemoved is a pinned tool that is no longer listed.
	StateRemoved
	// StateDuplicate is a listed tool with the name of one listed before
	// it: it is not checked, and which of the two a call reaches is
	// unknown.
	StateDuplicate
	// StateInvalid is a listed tool that cannot be pinned: over
	// [MaxDefinitionBytes] or [MaxDepth] ([Result.Err] says which).
	StateInvalid
)

var stateNames = [...]string{"pinned", "changed", "new", "removed", "duplicate", "invalid"}

// String returns the state's name as the command line shows it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Result is how one tool stands against the pins.
type Result struct {
	Tool  string
	State State
	// Pin is the listed tool's pin; empty for a removed, duplicate or
	// invalid tool.
	Pin string
	// Err says why an invalid tool cannot be pinned; it names the tool.
	Err error
	// Definition is the listed tool's definition in canonical form, for
	// a changed or new tool from [File.CheckTool] (to [Compare] with its
	// pin's, without canonicalising it again).
	Definition Definition
}

// Check tells how each of server's listed tools stands against its pins:
// a result for each tool in list order, then one for each pinned tool no
// longer listed, by name. A nil tool is skipped. A tool over the limits is [StateInvalid] and
// leaves the others unaffected. On a server with no pins, every tool is
// [StateNew].
func (f *File) Check(server string, tools []*mcp.Tool) []Result {
	var pinned map[string]Entry
	if s := f.Servers[server]; s != nil {
		pinned = s.Tools
	}
	results := make([]Result, 0, len(tools))
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		if seen[t.Name] {
			results = append(results, Result{Tool: t.Name, State: StateDuplicate})
			continue
		}
		seen[t.Name] = true
		results = append(results, f.CheckTool(server, t))
	}
	var removed []string
	for name := range pinned {
		if !seen[name] {
			removed = append(removed, name)
		}
	}
	slices.Sort(removed)
	for _, name := range removed {
		results = append(results, Result{Tool: name, State: StateRemoved})
	}
	return results
}

// CheckTool tells how one of server's tools stands against its pin:
// pinned, changed, new or invalid. It knows nothing of the rest of the
// list: whether the name is listed twice, or which pins are not listed.
func (f *File) CheckTool(server string, t *mcp.Tool) Result {
	e, ok := f.Lookup(server, t.Name)
	pin, c, err := f.pinFast(server, t, e.Pin)
	r := Result{Tool: t.Name, State: StatePinned, Pin: pin}
	switch {
	case err != nil:
		return Result{Tool: t.Name, State: StateInvalid, Err: err}
	case !ok:
		r.State = StateNew
	case e.Pin != pin:
		r.State = StateChanged
	default:
		return r
	}
	// The canonical form decodes into a Definition whose schemas are
	// canonical too, as NewDefinition makes it.
	if err := json.Unmarshal(c, &r.Definition); err != nil {
		return Result{Tool: t.Name, State: StateInvalid, Err: fmt.Errorf("tool %q: %w", t.Name, err)}
	}
	return r
}

// quickKey names a tool in [File.quick].
type quickKey struct{ server, tool string }

// pinFast returns t's pin, as [Pin] does, and its canonical form if it made
// it, but without canonicalising t when
// its definition is, byte for byte, the one last seen to give the pin want:
// the canonical form is a function of the definition's encoding, so the
// same bytes give the same pin. Most refreshes list tools unchanged; this
// makes checking them cost little more than encoding them.
func (f *File) pinFast(server string, t *mcp.Tool, want string) (string, []byte, error) {
	d, err := definitionOf(t)
	if err != nil {
		return "", nil, err
	}
	k := quickKey{server, t.Name}
	sum := plainHash(d)
	if want != "" && f.quick[k] == (quickEntry{sum, want}) {
		return want, nil, nil // passed the limits when it was remembered
	}
	c, err := d.canonical()
	if err != nil {
		return "", nil, err
	}
	pin := hashOf(c)
	if pin == want {
		if f.quick == nil {
			f.quick = map[quickKey]quickEntry{}
		}
		f.quick[k] = quickEntry{sum, pin}
	}
	return pin, c, nil
}

// plainHash is the SHA-256 of d's fields as they are, each prefixed by its
// length so that no two definitions share an input.
func plainHash(d Definition) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(d.Name))
	field([]byte(d.Title))
	field([]byte(d.Description))
	field(d.InputSchema)
	field(d.OutputSchema)
	if a := d.Annotations; a != nil {
		opt := func(p *bool) byte {
			switch {
			case p == nil:
				return 2
			case *p:
				return 1
			}
			return 0
		}
		field([]byte(a.Title))
		h.Write([]byte{1, opt(&a.ReadOnlyHint), opt(a.DestructiveHint), opt(&a.IdempotentHint), opt(a.OpenWorldHint)})
	} else {
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// quickEntry is the SHA-256 of a tool's plain JSON encoding and the pin it
// was found to give.
type quickEntry struct {
	plain [sha256.Size]byte
	pin   string
}
