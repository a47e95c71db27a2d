package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Approval policy values, as config files spell them.
const (
	approvalAlways = "always"
	approvalNever  = "never"
	toolNamesKey   = "tool_names"
)

// ApprovalRules say which tools need a human's approval before they run, by
// their original names. The zero value and a nil *ApprovalRules need none.
// Rules are immutable once parsed, so they are safe for concurrent use.
type ApprovalRules struct {
	all   bool            // every tool needs approval
	tools map[string]bool // original tool name → needs approval; unlisted tools need none
}

// ParseApproval validates and builds rules from any of the forms that config
// files and hosts use:
//
//	nil                         no tool needs approval
//	true, false                 every tool, or none
//	"always", "never"           every tool, or none
//	{"delete": "always", "read": false}
//	                            per tool: "always", "never" or a bool; unlisted
//	                            tools need none. "always" and "never" are tool
//	                            names as keys here.
//	{"always": {"tool_names": ["delete"]}, "never": {"tool_names": ["read"]}}
//	                            lists of tools; unlisted tools need none
//
// Maps may be map[string]any, map[string]string or map[string]bool. A map is
// read as lists when every key is "always" or "never" and every value is an
// object; such an object may hold only "tool_names", a []any or []string of
// names, and a name may not be in both lists.
//
// Any other value, or any invalid value inside one, is an error that names
// what is wrong: a typo must not silently let tools run unapproved.
func ParseApproval(v any) (*ApprovalRules, error) {
	p, err := parseRules(v)
	if err != nil {
		return nil, fmt.Errorf("approval policy: %w", err)
	}
	return p, nil
}

func parseRules(v any) (*ApprovalRules, error) {
	switch v := v.(type) {
	case nil:
		return &ApprovalRules{}, nil
	case bool:
		return &ApprovalRules{all: v}, nil
	case string:
		all, err := parseApproval(v)
		if err != nil {
			return nil, err
		}
		return &ApprovalRules{all: all}, nil
	case map[string]any:
		return mapPolicy(v)
	case map[string]string:
		return mapPolicy(anyMap(v))
	case map[string]bool:
		return mapPolicy(anyMap(v))
	default:
		return nil, fmt.Errorf("unsupported type %T", v)
	}
}

// parseApproval reads "always" or "never".
func parseApproval(s string) (bool, error) {
	switch s {
	case approvalAlways:
		return true, nil
	case approvalNever:
		return false, nil
	}
	return false, fmt.Errorf("%q is not %q or %q", s, approvalAlways, approvalNever)
}

// anyMap returns m with its values boxed, so that typed maps share one parser.
func anyMap[V any](m map[string]V) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// mapPolicy builds a policy from either map form.
func mapPolicy(m map[string]any) (*ApprovalRules, error) {
	if isListForm(m) {
		return listPolicy(m)
	}
	p := &ApprovalRules{tools: make(map[string]bool, len(m))}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		need, err := parseToolApproval(name, m[name])
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
		p.tools[name] = need
	}
	return p, nil
}

// parseToolApproval reads one entry of a map from tool names.
func parseToolApproval(name string, v any) (bool, error) {
	if name == "" {
		return false, errors.New("empty tool name")
	}
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		return parseApproval(v)
	default:
		return false, fmt.Errorf("got %T, want %q, %q or a bool", v, approvalAlways, approvalNever)
	}
}

// isListForm reports whether m is {"always": {...}, "never": {...}} rather
// than a map from tool names: every key is "always" or "never" and every value
// is an object. Otherwise "always" and "never" are tool names.
func isListForm(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k, v := range m {
		if k != approvalAlways && k != approvalNever {
			return false
		}
		switch v.(type) {
		case map[string]any, map[string][]string:
		default:
			return false
		}
	}
	return true
}

// listPolicy builds a policy from the list form, which isListForm accepted.
func listPolicy(m map[string]any) (*ApprovalRules, error) {
	always, err := listedNames(m, approvalAlways)
	if err != nil {
		return nil, err
	}
	never, err := listedNames(m, approvalNever)
	if err != nil {
		return nil, err
	}
	p := &ApprovalRules{tools: make(map[string]bool, len(always)+len(never))}
	for _, name := range never {
		p.tools[name] = false
	}
	for _, name := range always {
		if need, ok := p.tools[name]; ok && !need {
			return nil, fmt.Errorf("tool %q is in both %q and %q", name, approvalAlways, approvalNever)
		}
		p.tools[name] = true
	}
	return p, nil
}

// listedNames returns the names in m[key], a {"tool_names": [...]} object.
// A missing object or list is empty.
func listedNames(m map[string]any, key string) ([]string, error) {
	var obj map[string]any
	switch o := m[key].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		obj = o
	case map[string][]string:
		obj = anyMap(o)
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if k != toolNamesKey {
			return nil, fmt.Errorf("%s: unknown key %q, want only %q", key, k, toolNamesKey)
		}
	}
	list, ok := obj[toolNamesKey]
	if !ok {
		return nil, nil
	}
	names, err := nameList(list)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return names, nil
}

// nameList reads the "tool_names" list: non-empty strings.
func nameList(list any) ([]string, error) {
	var names []string
	switch l := list.(type) {
	case []string:
		names = l
	case []any:
		names = make([]string, len(l))
		for i, v := range l {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: got %T, want a string", toolNamesKey, i, v)
			}
			names[i] = s
		}
	default:
		return nil, fmt.Errorf("%s: got %T, want a list of strings", toolNamesKey, list)
	}
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("%s[%d]: empty tool name", toolNamesKey, i)
		}
	}
	return names, nil
}

// Requires reports whether the tool with the given original name needs
// approval.
func (p *ApprovalRules) Requires(tool string) bool {
	return p != nil && (p.all || p.tools[tool])
}
