package upstream

import (
	"bytes"
	"encoding/json"

	segjson "github.com/segmentio/encoding/json"
)

// decodeLine reports whether line, less the whitespace around it, is what
// the go-sdk's stdio transport (v1.8) takes as a JSON-RPC message or batch,
// and counts the notifications in it that a handler forwards (see
// forwarded). The transport reads one JSON value with encoding/json, and
// refuses anything after it on the line; then it decodes the value with
// jsonrpc.DecodeMessage, or each element of an array with it. A line that
// would fail any of these ends the session.
//
// DecodeMessage itself would be the plainest check, but in go-sdk v1.8 it
// allocates 32 KiB for every message it decodes (docs/performance.md), and
// this check runs on every line. So it decodes what DecodeMessage reads of
// a message, the envelope, with the same library, the same flag and the
// same rules, where the line is: a fuzz test holds the two together.
func decodeLine(line []byte) (ok bool, notes int) {
	if line[0] != '{' && line[0] != '[' || !segjson.Valid(line) || tooDeep(line) {
		return false, 0
	}
	if line[0] == '{' {
		m, ok := decodeEnvelope(line)
		return ok, m.notes()
	}
	var batch []json.RawMessage
	if _, err := segjson.Parse(line, &batch, segjson.DontMatchCaseInsensitiveStructFields); err != nil || len(batch) == 0 {
		return false, 0
	}
	// The transport refuses a batch in which two requests, or two
	// notifications, have the same id.
	ids := make(map[any]bool)
	for _, raw := range batch {
		m, ok := decodeEnvelope(raw)
		if !ok || m.method != nil && ids[m.id] {
			return false, 0
		}
		if m.method != nil {
			ids[m.id] = true
		}
		notes += m.notes()
	}
	return true, notes
}

// envelope is what jsonrpc.DecodeMessage decodes of a message first (its
// wireDecode), less the params and result, which it keeps as they are.
type envelope struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  json.RawMessage `json:"method"`
	Error   *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error,omitempty"`
}

// A decoded message: its id, as jsonrpc.MakeID makes it (an int64, a
// string, or nil for none), and its method (nil for a response).
type decoded struct {
	id     any
	method *string
}

// notes is 1 if m is a notification a handler forwards, else 0.
func (m decoded) notes() int {
	if m.id == nil && m.method != nil && forwarded(*m.method) {
		return 1
	}
	return 0
}

// decodeEnvelope applies jsonrpc.DecodeMessage's rules to data, one valid
// JSON value: a "2.0" version tag; an id that is a number, a string or
// absent; a method, if present, that is a string; and an id if there is no
// method.
func decodeEnvelope(data []byte) (decoded, bool) {
	var e envelope
	if _, err := segjson.Parse(data, &e, segjson.DontMatchCaseInsensitiveStructFields); err != nil || e.Version != "2.0" {
		return decoded{}, false
	}
	var m decoded
	switch id := e.ID.(type) {
	case nil:
	case float64:
		m.id = int64(id)
	case string:
		m.id = id
	default:
		return decoded{}, false
	}
	if len(e.Method) == 0 {
		return m, m.id != nil
	}
	m.method = new(string)
	if _, err := segjson.Parse(e.Method, m.method, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return decoded{}, false
	}
	return m, true
}

// maxDepth is the deepest nesting of objects and arrays that go-sdk's
// decoding takes.
const maxDepth = 1000

// tooDeep reports whether data, valid JSON, nests objects and arrays
// deeper than maxDepth, as go-sdk counts: outside strings.
func tooDeep(data []byte) bool {
	if bytes.Count(data, []byte("{"))+bytes.Count(data, []byte("[")) <= maxDepth {
		return false // the usual case, found at the speed of bytes.Count
	}
	var v valueScan
	for _, c := range data {
		if v.step(c); v.depth > maxDepth {
			return true
		}
	}
	return false
}

// A valueScan follows a JSON value over the lines it is printed on, to find
// where it ends: the depth of its objects and arrays, outside strings.
type valueScan struct {
	open     bool // a value is being gathered
	fed      int  // how much of it, from its start, was fed
	depth    int
	inString bool
	escaped  bool
}

// feed scans the next bytes of the value and reports whether it ended in
// them.
func (v *valueScan) feed(b []byte) bool {
	for _, c := range b {
		if v.step(c) && v.depth == 0 {
			return true
		}
	}
	return false
}

// step scans one byte of JSON and reports whether it closed an object or
// an array.
func (v *valueScan) step(c byte) (closed bool) {
	switch {
	case v.inString && v.escaped:
		v.escaped = false
	case v.inString && c == '\\':
		v.escaped = true
	case v.inString && c == '"':
		v.inString = false
	case v.inString:
	case c == '"':
		v.inString = true
	case c == '{' || c == '[':
		v.depth++
	case c == '}' || c == ']':
		v.depth--
		return true
	}
	return false
}
