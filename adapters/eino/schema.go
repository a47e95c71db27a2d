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
// clients that walk it rather than marshal it.
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
	return convertObject(m), nil
}

// convertObject converts one schema object, keyword by keyword.
func convertObject(m map[string]any) *jsonschema.Schema {
	// Non-nil Extras, even empty, make an empty schema marshal as {}, not
	// as true.
	s := &jsonschema.Schema{Extras: make(map[string]any)}
	dst := reflect.ValueOf(s).Elem()
	for _, k := range sortedKeys(m) {
		v := m[k]
		one := new(jsonschema.Schema)
		if setKeyword(one, k, v) && marshalsTo(one, k, v) {
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

// convertSub converts a subschema: an object or a boolean.
func convertSub(v any) (*jsonschema.Schema, bool) {
	switch v := v.(type) {
	case bool:
		s := new(jsonschema.Schema)
		if err := json.Unmarshal([]byte(fmt.Sprint(v)), s); err != nil {
			return nil, false
		}
		return s, true
	case map[string]any:
		return convertObject(v), true
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

// setKeyword sets keyword k of s to v, converting subschemas with
// convertSub so that their own extras survive. It reports false when s has
// no field for k or v does not fit it.
func setKeyword(s *jsonschema.Schema, k string, v any) bool {
	f := reflect.ValueOf(s).Elem()
	switch {
	case slices.Contains(subOne, k):
		sub, ok := convertSub(v)
		if !ok {
			return false
		}
		f.Field(fieldsOf(k)[0]).Set(reflect.ValueOf(sub))
		return true
	case slices.Contains(subList, k):
		list, ok := v.([]any)
		if !ok {
			return false
		}
		subs := make([]*jsonschema.Schema, len(list))
		for i, e := range list {
			if subs[i], ok = convertSub(e); !ok {
				return false
			}
		}
		f.Field(fieldsOf(k)[0]).Set(reflect.ValueOf(subs))
		return true
	case slices.Contains(subMap, k):
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		subs := make(map[string]*jsonschema.Schema, len(obj))
		for name, e := range obj {
			if subs[name], ok = convertSub(e); !ok {
				return false
			}
		}
		f.Field(fieldsOf(k)[0]).Set(reflect.ValueOf(subs).Convert(f.Field(fieldsOf(k)[0]).Type()))
		return true
	case k == subOrder:
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		props := orderedmap.New[string, *jsonschema.Schema]()
		for _, name := range sortedKeys(obj) {
			sub, ok := convertSub(obj[name])
			if !ok {
				return false
			}
			props.Set(name, sub)
		}
		s.Properties = props
		return true
	case fieldsOf(k) == nil:
		return false
	}
	b, err := json.Marshal(map[string]any{k: v})
	if err != nil {
		return false
	}
	return json.Unmarshal(b, s) == nil
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
