package catalog

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CloneTool returns a deep copy of t, or nil if t is nil. Changing the copy,
// down to the nested maps of its schemas, never changes t.
//
// Schemas and Meta values decoded from JSON (maps, slices, strings, numbers,
// booleans and nil) are copied directly. Any other type is copied with a JSON
// round trip into a new value of the same type, or into the generic JSON form
// if that fails. A value that cannot be marshaled at all is shared, since it
// could not be sent to a client either.
func CloneTool(t *mcp.Tool) *mcp.Tool {
	if t == nil {
		return nil
	}
	c := *t // copies the value fields; every reference field is replaced below
	if t.Meta != nil {
		c.Meta = cloneMap(t.Meta)
	}
	if t.Annotations != nil {
		a := *t.Annotations
		a.DestructiveHint = cloneBoolPtr(a.DestructiveHint)
		a.OpenWorldHint = cloneBoolPtr(a.OpenWorldHint)
		c.Annotations = &a
	}
	c.Icons = cloneIcons(t.Icons)
	c.InputSchema = cloneValue(t.InputSchema)
	c.OutputSchema = cloneValue(t.OutputSchema)
	return &c
}

// ClonePrompt returns a deep copy of p, or nil if p is nil.
func ClonePrompt(p *mcp.Prompt) *mcp.Prompt {
	if p == nil {
		return nil
	}
	c := *p
	if p.Arguments != nil {
		c.Arguments = make([]*mcp.PromptArgument, len(p.Arguments))
		for i, a := range p.Arguments {
			if a != nil {
				ac := *a
				c.Arguments[i] = &ac
			}
		}
	}
	c.Icons = cloneIcons(p.Icons)
	c.Meta = cloneMeta(p.Meta)
	return &c
}

// CloneResource returns a deep copy of r, or nil if r is nil.
func CloneResource(r *mcp.Resource) *mcp.Resource {
	if r == nil {
		return nil
	}
	c := *r
	c.Annotations = cloneAnnotations(r.Annotations)
	c.Icons = cloneIcons(r.Icons)
	c.Meta = cloneMeta(r.Meta)
	return &c
}

// CloneTemplate returns a deep copy of t, or nil if t is nil.
func CloneTemplate(t *mcp.ResourceTemplate) *mcp.ResourceTemplate {
	if t == nil {
		return nil
	}
	c := *t
	c.Annotations = cloneAnnotations(t.Annotations)
	c.Icons = cloneIcons(t.Icons)
	c.Meta = cloneMeta(t.Meta)
	return &c
}

func cloneIcons(icons []mcp.Icon) []mcp.Icon {
	if icons == nil {
		return nil
	}
	c := make([]mcp.Icon, len(icons))
	for i, icon := range icons {
		icon.Sizes = slices.Clone(icon.Sizes)
		c[i] = icon
	}
	return c
}

func cloneAnnotations(a *mcp.Annotations) *mcp.Annotations {
	if a == nil {
		return nil
	}
	c := *a
	c.Audience = slices.Clone(a.Audience)
	return &c
}

func cloneMeta(m mcp.Meta) mcp.Meta {
	if m == nil {
		return nil
	}
	return cloneMap(m)
}

func cloneBoolPtr(p *bool) *bool {
	if p == nil {
		return nil
	}
	b := *p
	return &b
}

// cloneMap returns a deep copy of m, which must not be nil.
func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneValue(v)
	}
	return c
}

// cloneValue returns a deep copy of v. It is fast for the types that
// encoding/json decodes into, and falls back to cloneSlow for others.
func cloneValue(v any) any {
	switch v := v.(type) {
	case nil, string, float64, bool, json.Number,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		return v
	case map[string]any:
		if v == nil {
			return v
		}
		return cloneMap(v)
	case mcp.Meta:
		if v == nil {
			return v
		}
		return mcp.Meta(cloneMap(v))
	case []any:
		if v == nil {
			return v
		}
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = cloneValue(x)
		}
		return c
	case json.RawMessage:
		return json.RawMessage(slices.Clone([]byte(v)))
	case []byte:
		return slices.Clone(v)
	case []string:
		return slices.Clone(v)
	case map[string]string:
		return maps.Clone(v)
	default:
		return cloneSlow(v)
	}
}

// cloneSlow copies v, of a type that cloneValue does not know, with a JSON
// round trip. It keeps v's type when it can.
func cloneSlow(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return v // immutable
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		if rv.IsNil() {
			return v
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	t := rv.Type()
	if t.Kind() == reflect.Pointer {
		p := reflect.New(t.Elem())
		if json.Unmarshal(data, p.Interface()) == nil {
			return p.Interface()
		}
	} else {
		p := reflect.New(t)
		if json.Unmarshal(data, p.Interface()) == nil {
			return p.Elem().Interface()
		}
	}
	var generic any
	if json.Unmarshal(data, &generic) != nil {
		return v
	}
	return generic
}
