package pins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxDefinitionBytes is the largest definition that is pinned, measured as
// its JSON encoding: 1 MiB, far above any real tool (the largest seen are a
// few tens of KiB) and small enough that a server cannot make pinning cost
// much.
const MaxDefinitionBytes = 1 << 20

// MaxDepth is the deepest nesting of JSON objects and arrays in a definition
// that is pinned, counting the definition object itself as 1: 64 leaves room
// for about 30 levels of nested schemas (each is a "properties" object and
// a property), where real tools use fewer than 10, and bounds the recursion
// that canonicalising and comparing a definition need.
const MaxDepth = 64

// ErrTooLarge means that a definition is over [MaxDefinitionBytes].
var ErrTooLarge = errors.New("definition too large to pin")

// ErrTooDeep means that a definition is nested deeper than [MaxDepth].
var ErrTooDeep = errors.New("definition nested too deep to pin")

// Definition is the part of a tool that is pinned, as the pins file keeps
// it. Schemas are kept as their canonical JSON.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// Annotations are a tool's annotations as they are pinned. They are
// encoded here rather than by [mcp.ToolAnnotations.MarshalJSON], whose form
// depends on a GODEBUG setting, so that a pin does not: readOnlyHint and
// idempotentHint are always present (the protocol library cannot tell them
// unset from false), the other hints only when set, title only when not
// empty.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// definitionOf is t's pinned part, with its schemas as encoding/json gives
// them (not yet canonical).
func definitionOf(t *mcp.Tool) (Definition, error) {
	d := Definition{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if d.InputSchema, err = schemaJSON(t.InputSchema); err != nil {
		return Definition{}, fmt.Errorf("tool %q: inputSchema: %w", t.Name, err)
	}
	if d.OutputSchema, err = schemaJSON(t.OutputSchema); err != nil {
		return Definition{}, fmt.Errorf("tool %q: outputSchema: %w", t.Name, err)
	}
	if a := t.Annotations; a != nil {
		d.Annotations = &Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return d, nil
}

// schemaJSON encodes a schema; nil and JSON null are absent.
func schemaJSON(s any) (json.RawMessage, error) {
	if s == nil {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// canonical is d's RFC 8785 form, or an error naming the tool when d is
// over the limits.
func (d Definition) canonical() ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", d.Name, err)
	}
	return canonicalJSON(d.Name, b)
}

// canonicalJSON checks b against the limits, then canonicalises it.
func canonicalJSON(name string, b []byte) ([]byte, error) {
	if len(b) > MaxDefinitionBytes {
		return nil, fmt.Errorf("tool %q: definition is %d bytes of JSON, over the %d-byte limit: %w",
			name, len(b), MaxDefinitionBytes, ErrTooLarge)
	}
	if depth(b) > MaxDepth {
		return nil, fmt.Errorf("tool %q: definition is nested more than %d deep: %w", name, MaxDepth, ErrTooDeep)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("tool %q: canonical JSON: %w", name, err)
	}
	return c, nil
}

// depth is the deepest nesting of objects and arrays in the JSON b, read
// in one pass without recursion; it stops counting past MaxDepth.
func depth(b []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			if d > deepest {
				deepest = d
				if deepest > MaxDepth {
					return deepest
				}
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// Pin returns the pin of t: the hex SHA-256 of the RFC 8785 canonical JSON
// of its name, title, description, inputSchema, outputSchema and
// annotations. A definition over [MaxDefinitionBytes] or [MaxDepth] gets an
// error naming the tool and wrapping [ErrTooLarge] or [ErrTooDeep].
func Pin(t *mcp.Tool) (string, error) {
	d, err := definitionOf(t)
	if err != nil {
		return "", err
	}
	c, err := d.canonical()
	if err != nil {
		return "", err
	}
	return hashOf(c), nil
}

// NewDefinition returns t's pinned part, its schemas in canonical form (as
// the pins file keeps them), and its pin.
func NewDefinition(t *mcp.Tool) (Definition, string, error) {
	d, err := definitionOf(t)
	if err != nil {
		return Definition{}, "", err
	}
	c, err := d.canonical()
	if err != nil {
		return Definition{}, "", err
	}
	// The canonical form decodes back into a Definition whose raw schemas
	// are canonical too.
	var cd Definition
	if err := json.Unmarshal(c, &cd); err != nil {
		return Definition{}, "", fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return cd, hashOf(c), nil
}

// Tool returns d as a tool definition, whose schemas are d's JSON.
func (d Definition) Tool() *mcp.Tool {
	t := &mcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description}
	if len(d.InputSchema) > 0 {
		t.InputSchema = d.InputSchema
	}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	if a := d.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return t
}

// Replayable reports whether d's annotations let a call that may have run
// run again: readOnlyHint or idempotentHint.
func (d Definition) Replayable() bool {
	return d.Annotations != nil && (d.Annotations.ReadOnlyHint || d.Annotations.IdempotentHint)
}

// Pin returns d's pin, as [Pin] does for the tool d was made from.
func (d Definition) Pin() (string, error) {
	c, err := d.canonical()
	if err != nil {
		return "", err
	}
	return hashOf(c), nil
}

func hashOf(c []byte) string {
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// equalJSON reports whether two JSON values are the same once canonical;
// a value that cannot be canonicalised equals only its identical bytes.
func equalJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	ca, err1 := jcs.Transform(a)
	cb, err2 := jcs.Transform(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}
