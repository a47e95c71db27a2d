package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolInfo is what a call needs to know of a tool before sending it.
type toolInfo struct {
	replayable bool     // readOnlyHint or idempotentHint
	required   []string // the input schema's required properties

	once     sync.Once
	resolved *jsonschema.Resolved // see validator
}

// indexTools computes what calls need to know of each tool.
func indexTools(tools []*mcp.Tool) map[string]*toolInfo {
	index := make(map[string]*toolInfo, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		info := &toolInfo{required: requiredOf(t.InputSchema)}
		if a := t.Annotations; a != nil {
			info.replayable = a.ReadOnlyHint || a.IdempotentHint
		}
		index[t.Name] = info
	}
	return index
}

// validator returns the schema that checks a call's required arguments, or
// nil when nothing is required. It is resolved on first use: most tools of
// most servers are never called.
func (t *toolInfo) validator() *jsonschema.Resolved {
	if t == nil || len(t.required) == 0 {
		return nil
	}
	t.once.Do(func() {
		schema := &jsonschema.Schema{Type: "object", Required: t.required}
		t.resolved, _ = schema.Resolve(nil)
	})
	return t.resolved
}

// requiredOf returns the "required" list of a JSON-decoded schema.
func requiredOf(schema any) []string {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	list, _ := m["required"].([]any)
	var req []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			req = append(req, s)
		}
	}
	return req
}

// isNull reports whether args would be sent as JSON null: nil, a nil map,
// pointer or slice, or raw JSON that is empty or null.
func isNull(args any) bool {
	switch v := args.(type) {
	case nil:
		return true
	case json.RawMessage:
		return len(bytes.TrimSpace(v)) == 0 || string(bytes.TrimSpace(v)) == "null"
	case map[string]any:
		return v == nil
	}
	switch rv := reflect.ValueOf(args); rv.Kind() {
	case reflect.Map, reflect.Pointer, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// tool returns what is known of the tool called name, or nil: a tool the
// server did not list is not checked, and the server answers for it.
func (u *Upstream) tool(name string) *toolInfo {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lists.toolIndex[name]
}

// arguments returns what to send as the arguments of a call to the tool
// described by info, checked against its required properties: nil is sent
// as {}, since JavaScript servers reject "arguments": null. Arguments of
// any type that encodes to a JSON object are accepted.
func arguments(info *toolInfo, args any) (any, error) {
	if isNull(args) {
		args = map[string]any{}
	}
	v := info.validator()
	if v == nil {
		return args, nil
	}
	m, ok := args.(map[string]any)
	if !ok {
		raw, isRaw := args.(json.RawMessage)
		if !isRaw {
			var err error
			if raw, err = json.Marshal(args); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
			}
		}
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return nil, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidArguments)
		}
	}
	if err := v.Validate(m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return args, nil
}
