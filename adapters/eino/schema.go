package einotools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/eino-contrib/jsonschema"
	orderedmap "github.com/wk8/go-ordered-map/v2"
)

// maxDepth is how deep subschemas keep their structure: a schema nested
// deeper than maxDepth levels is carried as it is, in the Extras of the
// schema at that depth, so that a hostile schema costs time in proportion
// to its size, and its marshaling a bounded number of passes.
const maxDepth = 64

// convertSchema turns a JSON schema, as the manager gives it (decoded
// JSON: maps, slices, strings, numbers, bools), into Eino's
// *jsonschema.Schema so that the schema marshals back to the same JSON.
//
// Eino's Schema decodes only the keywords it has fields for, and turns an
// empty schema {} into true unless its Extras are set; its Extras are marshaled but never decoded.
// So each keyword is converted on its own and kept in a field only if that
// field marshals back to the keyword's value; any other keyword (x-...,
// draft-07's definitions and dependencies, a value of an unexpected type)
// goes to Extras as it is. Subschemas keep their structure (Properties, Items ...) for the model
// clients that walk it rather than marshal it, down to maxDepth.
//
// Each subschema is converted once, bottom up, and a keyword that holds
// subschemas is checked with each subschema in it replaced by true: a
// subschema marshals back to itself by construction, so the check of its
// container need not marshal it again, and the conversion takes time in
// proportion to the schema's size, not to its size times its depth.
func convertSchema(v any) (*jsonschema.Schema, error) {
	m, ok := v.(map[string]any)
	if !ok {
		// A json.RawMessage or a typed struct: decode it as JSON first.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
	}
	return convertObject(m, 0), nil
}

// convertObject converts one schema object, nested depth levels deep,
// keyword by keyword.
func convertObject(m map[string]any, depth int) *jsonschema.Schema {
	// Non-nil Extras, even empty, make an empty schema marshal as {}, not
	// as true.
	s := &jsonschema.Schema{Extras: make(map[string]any)}
	dst := reflect.ValueOf(s).Elem()
	for _, k := range sortedKeys(m) {
		v := m[k]
		one := new(jsonschema.Schema)
		if setKeyword(one, k, v, depth) {
			src := reflect.ValueOf(one).Elem()
			for _, i := range fieldsOf(k) {
				dst.Field(i).Set(src.Field(i))
			}
			continue
		}
		s.Extras[k] = v
	}
	return s
}

// convertSub converts a subschema, an object or a boolean, nested depth
// levels deep. It reports false for any other value.
func convertSub(v any, depth int) (*jsonschema.Schema, bool) {
	switch v := v.(type) {
	case bool:
		s := new(jsonschema.Schema)
		if err := json.Unmarshal([]byte(fmt.Sprint(v)), s); err != nil {
			return nil, false
		}
		if b, err := json.Marshal(s); err != nil || string(b) != fmt.Sprint(v) {
			return nil, false
		}
		return s, true
	case map[string]any:
		return convertObject(v, depth), true
	}
	return nil, false
}

// placeholder stands for a converted subschema when a keyword's container
// is checked: it marshals as true.
func placeholder(v any, _ int) (*jsonschema.Schema, bool) {
	switch v.(type) {
	case bool, map[string]any:
		return new(jsonschema.Schema), true
	}
	return nil, false
}

// The keywords whose values are subschemas, by shape.
var (
	subOne   = []string{"not", "if", "then", "else", "items", "contains", "additionalProperties", "propertyNames", "contentSchema"}
	subList  = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	subMap   = []string{"$defs", "dependentSchemas", "patternProperties"}
	subOrder = "properties"
)

func isSub(k string) bool {
	return slices.Contains(subOne, k) || slices.Contains(subList, k) || slices.Contains(subMap, k) || k == subOrder
}

// setKeyword sets keyword k of s, a schema nested depth levels deep, to v,
// and reports whether s then marshals to {k: v}; it reports false when s
// has no field for k, v does not fit it, or k holds subschemas and s is
// maxDepth deep.
func setKeyword(s *jsonschema.Schema, k string, v any, depth int) bool {
	switch {
	case isSub(k):
		if depth >= maxDepth || !setSubs(s, k, v, depth+1, convertSub) {
			return false
		}
		// Check the container alone: each subschema marshals back to
		// itself (convertSub), so put true in its place on both sides.
		shape := new(jsonschema.Schema)
		return setSubs(shape, k, v, depth+1, placeholder) && marshalsTo(shape, k, shapeOf(k, v))
	case fieldsOf(k) == nil:
		return false
	}
	b, err := json.Marshal(map[string]any{k: v})
	if err != nil {
		return false
	}
	return json.Unmarshal(b, s) == nil && marshalsTo(s, k, v)
}

// setSubs sets keyword k of s, which holds subschemas, to v, each
// subschema converted by conv. It reports false when v does not fit k.
func setSubs(s *jsonschema.Schema, k string, v any, depth int, conv func(any, int) (*jsonschema.Schema, bool)) bool {
	f := reflect.ValueOf(s).Elem().Field(fieldsOf(k)[0])
	switch {
	case slices.Contains(subOne, k):
		sub, ok := conv(v, depth)
		if !ok {
			return false
		}
		f.Set(reflect.ValueOf(sub))
		return true
	case slices.Contains(subList, k):
		list, ok := v.([]any)
		if !ok {
			return false
		}
		subs := make([]*jsonschema.Schema, len(list))
		for i, e := range list {
			if subs[i], ok = conv(e, depth); !ok {
				return false
			}
		}
		f.Set(reflect.ValueOf(subs))
		return true
	case slices.Contains(subMap, k):
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		subs := make(map[string]*jsonschema.Schema, len(obj))
		for name, e := range obj {
			if subs[name], ok = conv(e, depth); !ok {
				return false
			}
		}
		f.Set(reflect.ValueOf(subs).Convert(f.Type()))
		return true
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	props := orderedmap.New[string, *jsonschema.Schema]()
	for _, name := range sortedKeys(obj) {
		sub, ok := conv(obj[name], depth)
		if !ok {
			return false
		}
		props.Set(name, sub)
	}
	s.Properties = props
	return true
}

// shapeOf returns v, the value of keyword k, which holds subschemas, with
// true in place of each subschema.
func shapeOf(k string, v any) any {
	switch x := v.(type) {
	case []any:
		if slices.Contains(subList, k) {
			out := make([]any, len(x))
			for i := range out {
				out[i] = true
			}
			return out
		}
	case map[string]any:
		if !slices.Contains(subOne, k) {
			out := make(map[string]any, len(x))
			for name := range x {
				out[name] = true
			}
			return out
		}
	}
	return true
}

// marshalsTo reports whether s marshals to exactly {k: v}.
func marshalsTo(s *jsonschema.Schema, k string, v any) bool {
	got, err := json.Marshal(s)
	if err != nil {
		return false
	}
	want, err := json.Marshal(map[string]any{k: v})
	if err != nil {
		return false
	}
	return sameJSON(got, want)
}

// sameJSON reports whether a and b encode the same value; numbers are
// compared by their text.
func sameJSON(a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// schemaFields maps each keyword to the indexes of the Schema fields that
// hold it: two for "type" (Type and TypeEnhanced), one for the others.
var schemaFields = func() map[string][]int {
	fields := make(map[string][]int)
	t := reflect.TypeFor[jsonschema.Schema]()
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Name {
		case "Type", "TypeEnhanced":
			fields["type"] = append(fields["type"], i)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			fields[name] = []int{i}
		}
	}
	return fields
}()

func fieldsOf(keyword string) []int { return schemaFields[keyword] }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
