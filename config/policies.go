package config

import (
	"errors"
	"fmt"

	"github.com/tailscale/hujson"

	"github.com/switchboard-mcp/switchboard/internal/policy"
)

// PolicyRule is one rule of "gateway.policies":
//
//	{"allow" | "deny": {"servers": [...], "tools": [...], "prompts": [...], "resources": [...]}, "when": "CEL"}
//
// The lists hold globs, where `*` matches any run of characters (slashes
// included) and every other character itself. A nil list (absent) matches
// anything; an empty one matches nothing. A rule that sets none of Tools,
// Prompts and Resources applies to every kind of target; one that sets some
// applies only to those kinds.
type PolicyRule struct {
	// Deny says the rule denies what it matches; else it allows it.
	Deny bool
	// Servers are globs over server names.
	Servers []string
	// Tools are globs over public tool names ("memory__read").
	Tools []string
	// Prompts are globs over public prompt names.
	Prompts []string
	// Resources are globs over resource URIs.
	Resources []string
	// When is a CEL expression that must be true for the rule to match;
	// "" means true.
	When string
}

// ErrGatewayPolicy means "gateway.policies" is invalid. It fails the whole
// file: a gateway must not run with a rule it misread.
var ErrGatewayPolicy = errors.New("invalid gateway policy")

// PolicyRules converts rules for the gateway's policy engine. [Parse] and
// [Load] have compiled them once already, so that a bad rule fails the
// file.
func PolicyRules(rules []PolicyRule) []policy.Rule {
	out := make([]policy.Rule, len(rules))
	for i, r := range rules {
		out[i] = policy.Rule{Servers: r.Servers, Tools: r.Tools, Prompts: r.Prompts, Resources: r.Resources, When: r.When}
		if r.Deny {
			out[i].Effect = policy.Deny
		}
	}
	return out
}

// gatewayPolicies reads "gateway.policies" and compiles it; on error, field
// is the path of the bad part below it, such as "[2].when".
func gatewayPolicies(v *hujson.Value) (_ []PolicyRule, field string, _ error) {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		return nil, "", fmt.Errorf("%w: want a list of rules, such as [{\"allow\": {\"servers\": [\"memory\"]}}]", ErrGatewayPolicy)
	}
	rules := make([]PolicyRule, 0, len(arr.Elements))
	for i := range arr.Elements {
		r, sub, err := policyRule(&arr.Elements[i])
		if err != nil {
			return nil, joinField(fmt.Sprintf("[%d]", i), sub), err
		}
		rules = append(rules, r)
	}
	var re *policy.RuleError
	if _, err := policy.New(PolicyRules(rules), nil); errors.As(err, &re) {
		return nil, fmt.Sprintf("[%d].%s", re.Rule, policyField(rules[re.Rule], re.Field)), fmt.Errorf("%w: %s", ErrGatewayPolicy, re.Problem())
	} else if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrGatewayPolicy, err)
	}
	return rules, "", nil
}

// policyField is the config's path of the engine's field of r.
func policyField(r PolicyRule, field string) string {
	if field == "when" || field == "effect" {
		return field
	}
	if r.Deny {
		return "deny." + field
	}
	return "allow." + field
}

// policyRule reads one rule; on error, field is the path of the bad part
// below it.
func policyRule(v *hujson.Value) (_ PolicyRule, field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return PolicyRule{}, "", fmt.Errorf("%w: want an object with \"allow\" or \"deny\", and optionally \"when\"", ErrGatewayPolicy)
	}
	var r PolicyRule
	effects := 0
	for i := range obj.Members {
		m := &obj.Members[i]
		name := memberName(m)
		var err error
		switch name {
		case "allow", "deny":
			effects++
			if effects > 1 {
				return PolicyRule{}, name, fmt.Errorf("%w: a rule has one of \"allow\" and \"deny\", not both", ErrGatewayPolicy)
			}
			r.Deny = name == "deny"
			var sub string
			sub, err = policyTarget(&m.Value, &r)
			name = joinField(name, sub)
		case "when":
			lit, ok := literal(&m.Value)
			if !ok || lit.Kind() != '"' {
				err = fmt.Errorf("%w: want a CEL expression in a string, such as \"'eng' in identity.groups\"", ErrGatewayPolicy)
			} else if r.When = lit.String(); r.When == "" {
				err = fmt.Errorf("%w: empty; leave \"when\" out for a rule that always applies", ErrGatewayPolicy)
			}
		default:
			err = fmt.Errorf("%w: unknown field; want \"allow\", \"deny\" or \"when\"", ErrGatewayPolicy)
		}
		if err != nil {
			return PolicyRule{}, name, err
		}
	}
	if effects == 0 {
		return PolicyRule{}, "", fmt.Errorf("%w: want \"allow\" or \"deny\"", ErrGatewayPolicy)
	}
	return r, "", nil
}

// policyTarget reads the object of "allow" or "deny" into r.
func policyTarget(v *hujson.Value, r *PolicyRule) (field string, _ error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return "", fmt.Errorf("%w: want an object of glob lists (\"servers\", \"tools\", \"prompts\", \"resources\"); {} for everything", ErrGatewayPolicy)
	}
	for i := range obj.Members {
		m := &obj.Members[i]
		name := memberName(m)
		var dst *[]string
		switch name {
		case "servers":
			dst = &r.Servers
		case "tools":
			dst = &r.Tools
		case "prompts":
			dst = &r.Prompts
		case "resources":
			dst = &r.Resources
		default:
			// A misspelt list would widen the rule: refuse it.
			return name, fmt.Errorf("%w: unknown field; want \"servers\", \"tools\", \"prompts\" or \"resources\"", ErrGatewayPolicy)
		}
		arr, ok := m.Value.Value.(*hujson.Array)
		if !ok {
			return name, fmt.Errorf("%w: want a list of globs", ErrGatewayPolicy)
		}
		globs := make([]string, 0, len(arr.Elements))
		for j := range arr.Elements {
			lit, ok := literal(&arr.Elements[j])
			if !ok || lit.Kind() != '"' {
				return fmt.Sprintf("%s[%d]", name, j), fmt.Errorf("%w: want a glob in a string", ErrGatewayPolicy)
			}
			globs = append(globs, lit.String())
		}
		*dst = globs
	}
	return "", nil
}
