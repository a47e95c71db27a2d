package upstream

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestRequiredArgumentsOnRawJSON: required properties are checked on the
// raw arguments, as they are sent: top-level keys only, escaped or not,
// whatever the values hold.
func TestRequiredArgumentsOnRawJSON(t *testing.T) {
	info := &toolInfo{required: []string{"a", "b"}}
	for _, tc := range []struct {
		args    string
		missing string // "" if none
	}{
		{`{"a":1,"b":2}`, ""},
		{` { "b" : "x,}" , "a" : [1,{"c":2}] } `, ""},
		{`{"\u0061":1,"b":null}`, ""},       // "a", escaped
		{`{"a":{"b":1}}`, `argument "b"`},   // nested: not a top-level key
		{`{"a":"\"b\":1"}`, `argument "b"`}, // in a string: not a key
		{`{"ab":1,"b":2}`, `argument "a"`},
		{`{}`, `arguments "a", "b"`},
	} {
		got, err := checkArguments(info, json.RawMessage(tc.args))
		switch {
		case tc.missing == "" && err != nil:
			t.Errorf("%s: %v", tc.args, err)
		case tc.missing == "" && string(got.(json.RawMessage)) != tc.args:
			t.Errorf("%s is sent as %s, want it unchanged", tc.args, got)
		case tc.missing != "" && (!errors.Is(err, ErrInvalidArguments) || !strings.HasSuffix(err.Error(), "missing required "+tc.missing)):
			t.Errorf("%s: %v, want missing %s", tc.args, err, tc.missing)
		}
	}
	for _, bad := range []string{`[1]`, `"a"`, `{"a":1,}`, `{"a":1`, `1`} {
		if _, err := checkArguments(info, json.RawMessage(bad)); !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("%s: %v, want ErrInvalidArguments", bad, err)
		}
	}
	// Maps and structs are checked too.
	if _, err := checkArguments(info, map[string]any{"a": 1}); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("a map without b: %v", err)
	}
	if _, err := checkArguments(info, struct{ A, B int }{}); err == nil || !strings.Contains(err.Error(), `"a", "b"`) {
		t.Errorf("a struct with A and B: %v (JSON keys are case-sensitive)", err)
	}
	if _, err := checkArguments(info, struct {
		A int `json:"a"`
		B int `json:"b"`
	}{}); err != nil {
		t.Errorf("a struct with a and b: %v", err)
	}
}

// FuzzObjectKeys: the keys objectKeys finds are encoding/json's.
func FuzzObjectKeys(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,"}"]},"c\"d":"e"}`, `{"\u00e9":true, "x" : null}`, `[]`, `{"a":1,}`, ` {"a" :"b\\"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want map[string]json.RawMessage
		wantOK := json.Unmarshal(raw, &want) == nil && want != nil
		keys, ok := objectKeys(raw)
		if ok != wantOK {
			t.Fatalf("objectKeys(%q) ok = %v, encoding/json: %v", raw, ok, wantOK)
		}
		if !ok {
			return
		}
		for k := range want {
			if !keys.has(k) {
				t.Errorf("objectKeys(%q) lacks %q", raw, k)
			}
		}
		var found []string
		for _, s := range keys.spans {
			var k string
			if err := json.Unmarshal(raw[s[0]-1:s[1]+1], &k); err != nil {
				t.Fatalf("objectKeys(%q): span %q is not a string", raw, raw[s[0]-1:s[1]+1])
			}
			found = append(found, k)
		}
		slices.Sort(found)
		found = slices.Compact(found)
		if len(found) != len(want) {
			t.Errorf("objectKeys(%q) = %q, encoding/json has %d keys", raw, found, len(want))
		}
	})
}
