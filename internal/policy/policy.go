// Package policy decides what an identity may see and call through the
// gateway: a list of allow and deny rules, each over the target's server
// and name (globs) and an optional CEL condition over the identity and the
// target. Its one job is [Engine.Decide].
//
// Rules are compiled and checked once, by [New]: a glob that is empty, a
// condition that does not parse, is not boolean, is longer than
// [MaxExpressionBytes] or is sure to cost more than [CostLimit] is refused
// with the rule's index, the field and, for a condition, the line and column
// in the expression ([*RuleError]).
//
// Deciding:
//
//	no rules                      everything is allowed
//	a deny rule matches           denied (deny wins over allow)
//	else an allow rule matches    allowed
//	else                          denied (default deny once any rule exists)
//
// A rule matches a target when its lists match and its condition is true.
// A condition that fails at run time (a missing claim, a wrong type, its
// cost beyond [CostLimit]) fails closed: a deny rule then matches, an allow
// rule does not. Each rule's first such failure is logged; later ones are
// not, so that a bad rule cannot flood the log.
//
// An [Engine] is immutable and safe for concurrent use. It keeps nothing
// per identity.
package policy

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// CostLimit bounds the cost of one evaluation of a condition, in CEL's cost
// units (about one per operation, or per element a list operation visits).
// An evaluation that reaches it is stopped and fails closed; a condition
// whose least estimated cost is beyond it is refused at load.
const CostLimit = 10_000

// MaxExpressionBytes bounds the length of a condition. A longer one is
// refused at load.
const MaxExpressionBytes = 4096

// interruptEvery is how many comprehension iterations pass between checks
// of the cost limit, so that a long loop stops soon after it reaches it.
const interruptEvery = 100

// Effect is what a rule does when it matches.
type Effect int

const (
	// Allow lets the identity see and use the target, unless a deny rule
	// matches it too.
	Allow Effect = iota
	// Deny hides the target from the identity and refuses it.
	Deny
)

func (e Effect) String() string {
	if e == Deny {
		return "deny"
	}
	return "allow"
}

// Rule is one policy rule, as the config file has it. A nil list matches
// anything; an empty one matches nothing.
type Rule struct {
	Effect Effect
	// Servers are globs over server names.
	Servers []string
	// Tools, Prompts and Resources are globs over public tool names,
	// public prompt names and resource URIs. A rule that sets none of them
	// applies to every kind of target; one that sets some applies only to
	// targets of those kinds.
	Tools, Prompts, Resources []string
	// When is a CEL expression that must be true for the rule to match; ""
	// means true.
	When string
}

// Target is what an identity asks to see or use: a tool, a prompt or a
// resource, on a server. Exactly one of Tool, Prompt and URI is set.
type Target struct {
	Server string
	Tool   string // the public tool name
	Prompt string // the public prompt name
	URI    string // the resource's URI (or URI template)
	// Annotations are the tool's; nil means the defaults of the MCP
	// specification (readOnlyHint false, destructiveHint true,
	// idempotentHint false, openWorldHint true).
	Annotations *mcp.ToolAnnotations
}

// Decision is the outcome of [Engine.Decide].
type Decision struct {
	Allowed bool
	// Rule is the index of the rule that decided, or -1 when none did:
	// with no rules (allowed) or when no rule allowed (denied by default).
	Rule int
	// Err is the run-time error of the rule's condition, when the decision
	// is a deny because that condition failed.
	Err error
}

// ErrInvalidRule means a rule is malformed: every [*RuleError] is one.
var ErrInvalidRule = errors.New("invalid policy rule")

// RuleError is a rule that [New] refused.
type RuleError struct {
	Rule  int    // the rule's index
	Field string // "servers[2]", "when", ...
	// Line and Column are the position of the problem in the "when"
	// expression, from 1; 0 when it has none.
	Line, Column int
	Err          error // what is wrong
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("rule %d: %s: %s: %s", e.Rule, e.Field, ErrInvalidRule, e.Problem())
}

// Problem is what is wrong, with the position in the expression if there
// is one, but not the rule or the field.
func (e *RuleError) Problem() string {
	if e.Line > 0 {
		return fmt.Sprintf("%d:%d: %v", e.Line, e.Column, e.Err)
	}
	return e.Err.Error()
}

// Unwrap returns ErrInvalidRule and the cause.
func (e *RuleError) Unwrap() []error { return []error{ErrInvalidRule, e.Err} }

// Options configure an Engine. A nil *Options means defaults.
type Options struct {
	// Logger receives the first run-time failure of each rule's
	// condition. Default: discard.
	Logger *slog.Logger
}

// Engine decides with a list of compiled rules. It is immutable, so safe
// for concurrent use; the zero of *Engine (nil) allows everything.
type Engine struct {
	rules  []rule // in configured order
	deny   []int  // indexes into rules, in order
	allow  []int
	logger *slog.Logger
}

type rule struct {
	effect                    Effect
	servers                   globs
	tools, prompts, resources globs
	kinds                     bool // tools, prompts or resources is set
	when                      cel.Program
	expr                      string
	logged                    atomic.Bool // a run-time failure was logged
}

// New compiles rules. An error is a [*RuleError] for the first bad rule.
// New does no I/O.
func New(rules []Rule, opts *Options) (*Engine, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{rules: make([]rule, len(rules)), logger: o.Logger}
	for i, r := range rules {
		c := &e.rules[i]
		c.effect, c.expr = r.Effect, r.When
		var err error
		for _, l := range []struct {
			name string
			src  []string
			dst  *globs
		}{{"servers", r.Servers, &c.servers}, {"tools", r.Tools, &c.tools}, {"prompts", r.Prompts, &c.prompts}, {"resources", r.Resources, &c.resources}} {
			var bad int
			if *l.dst, bad, err = compileGlobs(l.src); err != nil {
				return nil, &RuleError{Rule: i, Field: fmt.Sprintf("%s[%d]", l.name, bad), Err: err}
			}
		}
		c.kinds = r.Tools != nil || r.Prompts != nil || r.Resources != nil
		if r.When != "" {
			if c.when, err = compileWhen(i, r.When); err != nil {
				return nil, err
			}
		}
		switch r.Effect {
		case Allow:
			e.allow = append(e.allow, i)
		case Deny:
			e.deny = append(e.deny, i)
		default:
			return nil, &RuleError{Rule: i, Field: "effect", Err: fmt.Errorf("unknown effect %d", r.Effect)}
		}
	}
	return e, nil
}

// Len returns the number of rules.
func (e *Engine) Len() int {
	if e == nil {
		return 0
	}
	return len(e.rules)
}

// Decide decides whether id (nil for an anonymous caller, which has an
// empty identity) may see and use t. It allocates little and never panics.
func (e *Engine) Decide(id *identity.Identity, t Target) Decision {
	if e == nil || len(e.rules) == 0 {
		return Decision{Allowed: true, Rule: -1}
	}
	// The activation is built only when a condition is evaluated.
	act := &activation{id: id, t: &t}
	for _, i := range e.deny {
		if ok, err := e.match(i, act, &t); ok || err != nil {
			return Decision{Rule: i, Err: err}
		}
	}
	for _, i := range e.allow {
		if ok, _ := e.match(i, act, &t); ok {
			return Decision{Allowed: true, Rule: i}
		}
	}
	return Decision{Rule: -1}
}

// match reports whether rule i matches t: its lists, then its condition.
// A condition that fails gives its error.
func (e *Engine) match(i int, act *activation, t *Target) (bool, error) {
	r := &e.rules[i]
	if r.servers != nil && !r.servers.match(t.Server) {
		return false, nil
	}
	if r.kinds {
		var gs globs
		var name string
		switch {
		case t.Tool != "":
			gs, name = r.tools, t.Tool
		case t.Prompt != "":
			gs, name = r.prompts, t.Prompt
		case t.URI != "":
			gs, name = r.resources, t.URI
		}
		if gs == nil || !gs.match(name) {
			return false, nil
		}
	}
	if r.when == nil {
		return true, nil
	}
	out, _, err := r.when.Eval(act)
	if err == nil {
		if b, ok := out.(types.Bool); ok {
			return bool(b), nil
		}
		err = fmt.Errorf("not a bool: %s", out.Type().TypeName())
	}
	err = fmt.Errorf("policy rule %d: when: %w", i, err)
	if !r.logged.Swap(true) {
		e.logger.Warn("policy condition failed; the rule fails closed (logged once per rule)",
			"rule", i, "effect", r.effect.String(), "error", err)
	}
	return false, err
}

// celIdentity is the identity as a condition sees it.
type celIdentity struct {
	Subject string         `cel:"subject"`
	Client  string         `cel:"client"`
	Scopes  []string       `cel:"scopes"`
	Groups  []string       `cel:"groups"`
	Claims  map[string]any `cel:"claims"`
}

// Variables a condition sees.
const (
	varIdentity    = "identity"
	varServer      = "server"
	varTool        = "tool"
	varPrompt      = "prompt"
	varURI         = "uri"
	varAnnotations = "annotations"
)

// celEnv is the CEL environment every condition is compiled in, and its
// type adapter, which knows celIdentity. It is built on first use, not at
// init, so that programs that load configs with no conditions pay nothing;
// a failure is a programming error, reported by every New.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[celIdentity](), ext.ParseStructTags(true)),
		cel.Variable(varIdentity, cel.ObjectType("policy.celIdentity")),
		cel.Variable(varServer, cel.StringType),
		cel.Variable(varTool, cel.StringType),
		cel.Variable(varPrompt, cel.StringType),
		cel.Variable(varURI, cel.StringType),
		cel.Variable(varAnnotations, cel.MapType(cel.StringType, cel.BoolType)),
		ext.Strings(),
		cel.ParserExpressionSizeLimit(MaxExpressionBytes),
	)
})

// compileWhen compiles rule i's condition.
func compileWhen(i int, expr string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, &RuleError{Rule: i, Field: "when", Err: err}
	}
	if len(expr) > MaxExpressionBytes {
		return nil, &RuleError{Rule: i, Field: "when", Err: fmt.Errorf("%d bytes, more than MaxExpressionBytes (%d)", len(expr), MaxExpressionBytes)}
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		e := &RuleError{Rule: i, Field: "when", Err: errors.New(issueText(iss))}
		if errs := iss.Errors(); len(errs) > 0 {
			loc := errs[0].Location
			if loc != nil && loc.Line() > 0 {
				e.Line, e.Column = loc.Line(), loc.Column()+1
			}
		}
		return nil, e
	}
	if ast.OutputType() != cel.BoolType {
		return nil, &RuleError{Rule: i, Field: "when", Line: 1, Column: 1,
			Err: fmt.Errorf("the expression is %s; want a bool", ast.OutputType())}
	}
	est, err := env.EstimateCost(ast, sizes{})
	if err != nil {
		return nil, &RuleError{Rule: i, Field: "when", Err: fmt.Errorf("estimating its cost: %w", err)}
	}
	if est.Min > CostLimit {
		return nil, &RuleError{Rule: i, Field: "when", Err: fmt.Errorf("its least estimated cost, %d, is more than CostLimit (%d)", est.Min, CostLimit)}
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(interruptEvery),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, &RuleError{Rule: i, Field: "when", Err: err}
	}
	return prg, nil
}

// issueText is the first issue's message, without the source excerpt that
// cel adds on the next lines.
func issueText(iss *cel.Issues) string {
	errs := iss.Errors()
	if len(errs) == 0 {
		return iss.String()
	}
	return errs[0].Message
}

// activation binds a condition's variables for one Decide, shared by its
// rules. The identity's CEL value is made on first use.
type activation struct {
	id       *identity.Identity
	t        *Target
	identity ref.Val // nil until first used
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varIdentity:
		if a.identity == nil {
			a.identity = identityValue(a.id)
		}
		return a.identity, true
	case varServer:
		return types.String(a.t.Server), true
	case varTool:
		return types.String(a.t.Tool), true
	case varPrompt:
		return types.String(a.t.Prompt), true
	case varURI:
		return types.String(a.t.URI), true
	case varAnnotations:
		return annotationValue(a.t.Annotations), true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// identityValue is id as a condition sees it: nil is the empty identity.
func identityValue(id *identity.Identity) ref.Val {
	ci := &celIdentity{}
	if id != nil {
		ci = &celIdentity{Subject: id.Subject, Client: id.Client, Scopes: id.Scopes, Groups: id.Groups, Claims: id.Claims}
	}
	if ci.Claims == nil {
		ci.Claims = map[string]any{}
	}
	// Only an engine with a condition evaluates, and New built the
	// environment for it.
	env, _ := celEnv()
	return env.CELTypeAdapter().NativeToValue(ci)
}

// annotationValues are the 16 possible annotation maps, built once,
// indexed by readOnly | destructive<<1 | idempotent<<2 | openWorld<<3.
var annotationValues = sync.OnceValue(func() (vs [16]ref.Val) {
	for i := range vs {
		vs[i] = types.DefaultTypeAdapter.NativeToValue(map[string]bool{
			"readOnlyHint":    i&1 != 0,
			"destructiveHint": i&2 != 0,
			"idempotentHint":  i&4 != 0,
			"openWorldHint":   i&8 != 0,
		})
	}
	return vs
})

// annotationValue is a's hints as a map with all four keys, the defaults of
// the MCP specification filling the ones a leaves out.
func annotationValue(a *mcp.ToolAnnotations) ref.Val {
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	i := 0
	if a.ReadOnlyHint {
		i |= 1
	}
	if a.DestructiveHint == nil || *a.DestructiveHint {
		i |= 2
	}
	if a.IdempotentHint {
		i |= 4
	}
	if a.OpenWorldHint == nil || *a.OpenWorldHint {
		i |= 8
	}
	return annotationValues()[i]
}
