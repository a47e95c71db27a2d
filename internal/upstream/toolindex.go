package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolInfo is what a call needs to know of a tool before sending it.
type toolInfo struct {
	replayable bool     // readOnlyHint or idempotentHint
	required   []string // the input schema's required properties
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

// checkArguments returns what to send as the arguments of a call to the tool
// described by info, checked against its required properties: nil is sent
// as {}, since JavaScript servers reject "arguments": null. Arguments of
// any type that encodes to a JSON object are accepted; raw JSON is checked
// as it is, and sent on unchanged, never decoded and encoded again.
func checkArguments(info *toolInfo, args any) (any, error) {
	if isNull(args) {
		args = map[string]any{}
	}
	if raw, ok := args.(json.RawMessage); ok {
		// Raw JSON that is not an object is refused here: sent, the
		// request's encoding would fail after the call counted as sent,
		// and look as if it may have run.
		if _, ok := objectKeys(raw); !ok {
			return nil, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidArguments)
		}
	}
	if info == nil || len(info.required) == 0 {
		return args, nil
	}
	var has func(key string) bool
	switch v := args.(type) {
	case map[string]any:
		has = func(key string) bool { _, ok := v[key]; return ok }
	default:
		raw, isRaw := args.(json.RawMessage)
		if !isRaw {
			var err error
			if raw, err = json.Marshal(args); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
			}
		}
		keys, ok := objectKeys(raw)
		if !ok {
			return nil, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidArguments)
		}
		has = keys.has
	}
	var missing []string
	for _, key := range info.required {
		if !has(key) {
			missing = append(missing, strconv.Quote(key))
		}
	}
	switch len(missing) {
	case 0:
		return args, nil
	case 1:
		return nil, fmt.Errorf("%w: missing required argument %s", ErrInvalidArguments, missing[0])
	}
	return nil, fmt.Errorf("%w: missing required arguments %s", ErrInvalidArguments, strings.Join(missing, ", "))
}

// keySpans are the keys of a JSON object: spans of its text, quotes
// excluded, still escaped.
type keySpans struct {
	raw   []byte
	spans [][2]int
}

// has reports whether key is one of the keys.
func (k keySpans) has(key string) bool {
	for _, s := range k.spans {
		text := k.raw[s[0]:s[1]]
		if bytes.IndexByte(text, '\\') < 0 && utf8.Valid(text) {
			if string(text) == key {
				return true
			}
			continue
		}
		var unescaped string // rare: a key with an escape, or not UTF-8
		if json.Unmarshal(k.raw[s[0]-1:s[1]+1], &unescaped) == nil && unescaped == key {
			return true
		}
	}
	return false
}

// objectKeys returns the keys of the JSON object raw, without decoding its
// values, and whether raw is a valid JSON object.
func objectKeys(raw []byte) (keySpans, bool) {
	keys := keySpans{raw: raw}
	if !json.Valid(raw) {
		return keys, false
	}
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return keys, false
	}
	for i = skipSpace(raw, i+1); raw[i] != '}'; {
		end := endOfString(raw, i)
		keys.spans = append(keys.spans, [2]int{i + 1, end - 1})
		i = skipValue(raw, skipSpace(raw, skipSpace(raw, end)+1)) // past the colon and the value
		if i = skipSpace(raw, i); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return keys, true
}

// The scanners below work on valid JSON only.

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index just past the string that starts at i.
func endOfString(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// skipValue returns the index just past the value that starts at i.
func skipValue(raw []byte, i int) int {
	depth := 0
	for ; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			i = endOfString(raw, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
