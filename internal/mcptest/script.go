//lint:file-ignore SA1019 The test server exercises sampling and logging, which the gateway forwards.

package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Behavior says what a tool does when it is called.
type Behavior string

// The behaviors a [ToolSpec] can have.
const (
	// Echo returns one text content: the JSON of the arguments, as
	// encoding/json marshals them as a map[string]any (keys sorted). It is
	// the default.
	Echo Behavior = "echo"
	// Fail returns a result with IsError set and the text "tool NAME failed".
	Fail Behavior = "fail"
	// Sleep waits for arguments["ms"] milliseconds (a number; absent means
	// 0) and returns "slept N ms". If the request is cancelled first, the
	// call ends with the context's error (a protocol error, not a result).
	// The wait is a timer in a select, so it runs on fake time under
	// testing/synctest.
	Sleep Behavior = "sleep"
	// Big returns a text of [Script.ResponseBytes] bytes of 'x' (default
	// 1 MiB).
	Big Behavior = "big"
	// Add returns the sum of the number arguments "a" and "b" as text. Missing
	// or non-number arguments give an IsError result.
	Add Behavior = "add"
	// Increment adds one to a counter kept by the server for its lifetime
	// (for the command form, the process) and returns the new count as text.
	// It is not idempotent, which makes it the tool to prove that a call
	// never runs twice.
	Increment Behavior = "increment"
	// Hang never answers: it waits until the request is cancelled or the
	// session or server closes.
	Hang Behavior = "hang"
	// Sample asks the calling client for a sampling completion of
	// arguments["text"] and returns the text of its answer; a failed request
	// gives an IsError result with the error.
	Sample Behavior = "sample"
	// Elicit asks the calling client for input: in form mode, with a
	// schema of one string property "name", or, when arguments["url"] is
	// set, in URL mode, for that URL. It returns the client's action, and
	// for an accepted form the name given, as "ACTION NAME"; a failed
	// request gives an IsError result with the error.
	Elicit Behavior = "elicit"
	// Roots asks the calling client for its roots and returns their URIs,
	// one per line; a failed request gives an IsError result with the error.
	Roots Behavior = "roots"
	// AskInput asks for a sampling completion of arguments["text"] the
	// multi round-trip way (revision 2026-07-28): its first answer is a
	// result with an input request, and the retry that carries the
	// client's response returns the text of that response. The go-sdk
	// fulfils the input request itself, as an ordinary request, for a
	// client on an older revision.
	AskInput Behavior = "ask-input"
	// Progress sends arguments["steps"] progress notifications (default 2)
	// with the call's progress token, if it has one, and an info log message
	// per step, then returns "done"; or, if arguments["hang"] is true, hangs
	// as [Hang] does, so that a test can wait for the progress of a call in
	// flight.
	Progress Behavior = "progress"
	// InvalidParams answers with the JSON-RPC error -32602 "Invalid params",
	// which names neither the tool nor an argument, as servers of revisions
	// before 2025-11-25 may answer arguments they refuse.
	InvalidParams Behavior = "invalid-params"
)

// A PingMode says how a server answers ping.
type PingMode string

// The ways a server can answer ping.
const (
	// PingAnswer answers, as the spec asks.
	PingAnswer PingMode = ""
	// PingHang never answers, like a wedged server.
	PingHang PingMode = "hang"
	// PingMethodNotFound answers JSON-RPC -32601, as servers that do not
	// implement ping do: such a server is alive.
	PingMethodNotFound PingMode = "method-not-found"
	// PingFail answers JSON-RPC -32603 "session terminated", like a server
	// that lost the session.
	PingFail PingMode = "fail"
)

// DefaultResponseBytes is the size of a [Big] response when
// [Script.ResponseBytes] is zero.
const DefaultResponseBytes = 1 << 20

// ToolSpec describes one tool of a scriptable server.
type ToolSpec struct {
	Name        string               `json:"name"`
	Description string               `json:"description,omitempty"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	// InputSchema is the tool's input schema. Nil means {"type":"object"}.
	//
	// A schema whose type is not "object" is served as given in tools/list
	// (the go-sdk itself refuses to register it), so that tests can publish
	// the broken schemas real servers sometimes do.
	InputSchema map[string]any `json:"inputSchema,omitempty"`
	// Behavior is what a call does; "" means [Echo].
	Behavior Behavior `json:"behavior,omitempty"`
}

// Script is a server's behaviour. It is JSON-serializable so that the command
// form (see [StdioCommand]) can receive it in its environment.
//
// The zero Script serves [DefaultTools] and injects no fault.
type Script struct {
	// Name is the implementation name reported to clients; "" means "mcptest".
	Name string `json:"name,omitempty"`
	// Title and Description are the implementation's title and
	// description reported to clients (serverInfo); "" reports none.
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	// Tools is the initial tool list. Nil means [DefaultTools]. (An empty,
	// non-nil list serves no tools in process; the command form cannot tell
	// it from nil, because the field is omitted when empty.)
	Tools []ToolSpec `json:"tools,omitempty"`
	// PageSize is the tools/list page size (go-sdk ServerOptions.PageSize);
	// 0 means the SDK default.
	PageSize int `json:"pageSize,omitempty"`
	// CallDelay is how long every tools/call waits before it runs (a timer in
	// a select with the request context, so it honours cancellation and
	// synctest).
	CallDelay time.Duration `json:"callDelay,omitempty"`
	// StartDelay is how long initialize (and server/discover) waits before
	// it is answered, as a server that loads for a while does.
	StartDelay time.Duration `json:"startDelay,omitempty"`
	// HangOnInitialize never answers initialize (nor server/discover) until
	// the request is cancelled or the session or server closes.
	HangOnInitialize bool `json:"hangOnInitialize,omitempty"`
	// HangOnListTools never answers tools/list until the request is
	// cancelled or the session or server closes.
	HangOnListTools bool `json:"hangOnListTools,omitempty"`
	// ExitAfterInitialize answers the handshake, then exits once
	// notifications/initialized arrives (or, for a 2026-07-28 client, right
	// after the server/discover answer is written). What exiting means in
	// each form is in the package documentation.
	ExitAfterInitialize bool `json:"exitAfterInitialize,omitempty"`
	// ExitAfterListTools answers the first tools/list of each session, then
	// exits right after that answer is written.
	ExitAfterListTools bool `json:"exitAfterListTools,omitempty"`
	// ExitOnCall exits without answering on receipt of the Nth tools/call
	// (1-based, counted over the server's lifetime; for the command form,
	// over the process's lifetime). 0 never exits. Over HTTP it restarts the
	// whole server, as a crash would ([Server.Restart]).
	ExitOnCall int `json:"exitOnCall,omitempty"`
	// Prompts, Resources and Templates are the initial prompt, resource and
	// resource-template lists (none by default).
	Prompts   []PromptSpec   `json:"prompts,omitempty"`
	Resources []ResourceSpec `json:"resources,omitempty"`
	Templates []TemplateSpec `json:"templates,omitempty"`
	// TemplatesError makes resources/templates/list answer a JSON-RPC error
	// with this code: -32601 (method not found, as servers without templates
	// answer) or another.
	TemplatesError int64 `json:"templatesError,omitempty"`
	// ListTTL is the cache hint (ttlMs) of list results; 0 gives none.
	ListTTL time.Duration `json:"listTTL,omitempty"`
	// CrashAfterCall runs the Nth tools/call (1-based, counted as ExitOnCall
	// is) and then crashes before its answer is written, as ExitOnCall
	// crashes: the tool ran, but the client cannot know it. 0 never crashes.
	CrashAfterCall int `json:"crashAfterCall,omitempty"`
	// Ping says how the server answers ping: [PingAnswer] (the default),
	// [PingHang], [PingMethodNotFound] or [PingFail].
	Ping PingMode `json:"ping,omitempty"`
	// GarbageOnStart (stdio only) writes a line that is not JSON-RPC to
	// stdout at start, before anything else: the garbage line.
	GarbageOnStart bool `json:"garbageOnStart,omitempty"`
	// GarbageOnCall (stdio only) writes the garbage line to stdout on every
	// tools/call, before answering it.
	GarbageOnCall bool `json:"garbageOnCall,omitempty"`
	// Garbage is the garbage line, without its newline; "" means a line
	// that is not JSON. It may be JSON that is not JSON-RPC, such as a
	// logger's {"level":30,"msg":"started"}.
	Garbage string `json:"garbage,omitempty"`
	// GarbageBytes, if larger than the garbage line, pads it with '#' to
	// that many bytes (its newline aside): a line too long to pass in the
	// environment of the command form.
	GarbageBytes int `json:"garbageBytes,omitempty"`
	// ResponseBytes is the size of a [Big] response; 0 means
	// [DefaultResponseBytes].
	ResponseBytes int `json:"responseBytes,omitempty"`
	// LegacyOnly answers server/discover with JSON-RPC "method not found"
	// (-32601), as servers from before revision 2026-07-28 do, so that
	// clients fall back to initialize and, over HTTP, to stateful sessions.
	LegacyOnly bool `json:"legacyOnly,omitempty"`
	// StateDir, for the command form only, is a directory where each
	// process records its events, for [ReadCounts].
	StateDir string `json:"stateDir,omitempty"`
	// StderrLines, for the command form only, is how many lines each
	// process writes to stderr at start: "mcptest: stderr line N", N from
	// 1, as a server that logs there does.
	StderrLines int `json:"stderrLines,omitempty"`
	// Flood, if set, makes the server's lists hostile: huge, or endless.
	Flood *ListFlood `json:"flood,omitempty"`
	// Stderr, for the command form only, is written to stderr at start,
	// after StderrLines, as it is: a server's own text, with what a
	// hostile one puts there (terminal escapes, say).
	Stderr string `json:"stderr,omitempty"`
}

// A ListFlood makes a server's lists hostile, for tests of the limits on
// what a client takes: each page of a flooded list carries Items made-up
// items (after the server's own, on the first page), and with EndlessPages
// every page names a next one, without end. The made-up items are listed
// only: calling, getting or reading one fails. A flooded prompt or resource
// list is offered even when the script has none.
type ListFlood struct {
	// Lists are the lists flooded: "tools", "prompts", "resources" and
	// "templates" (resource templates). Nil means all four.
	Lists []string `json:"lists,omitempty"`
	// Items is how many made-up items each page carries; 0 means 1.
	Items int `json:"items,omitempty"`
	// ItemBytes is the length of each made-up item's description.
	ItemBytes int `json:"itemBytes,omitempty"`
	// EndlessPages gives every page a next cursor ("flood-N"): a list that
	// never ends.
	EndlessPages bool `json:"endlessPages,omitempty"`
}

// floods reports whether f floods the list named list.
func (f *ListFlood) floods(list string) bool {
	return f != nil && (f.Lists == nil || slices.Contains(f.Lists, list))
}

// implName returns the implementation name to report.
func (s *Script) implName() string {
	if s.Name == "" {
		return "mcptest"
	}
	return s.Name
}

// garbageLine returns the line GarbageOnStart and GarbageOnCall write,
// with its newline.
func (s *Script) garbageLine() string {
	line := s.Garbage
	if line == "" {
		line = defaultGarbage
	}
	if pad := s.GarbageBytes - len(line); pad > 0 {
		line += strings.Repeat("#", pad)
	}
	return line + "\n"
}

// bigBytes returns the size of a Big response.
func (s *Script) bigBytes() int {
	if s.ResponseBytes <= 0 {
		return DefaultResponseBytes
	}
	return s.ResponseBytes
}

// DefaultTools returns the tools a [Script] with nil Tools serves:
//
//	echo       Echo       readOnlyHint
//	add        Add        readOnlyHint; required numbers a and b
//	fail       Fail
//	sleep      Sleep      optional number ms
//	big        Big
//	increment  Increment  no hints: not read-only, not idempotent
//
// Each call returns a fresh slice.
func DefaultTools() []ToolSpec {
	return []ToolSpec{
		{
			Name:        "echo",
			Description: "Returns the JSON of its arguments.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			Behavior:    Echo,
		},
		{
			Name:        "add",
			Description: "Returns the sum of a and b.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"a": map[string]any{"type": "number", "description": "the first addend"},
					"b": map[string]any{"type": "number", "description": "the second addend"},
				},
				"required": []any{"a", "b"},
			},
			Behavior: Add,
		},
		{
			Name:        "fail",
			Description: "Always fails with an error result.",
			Behavior:    Fail,
		},
		{
			Name:        "sleep",
			Description: "Waits for ms milliseconds, or until cancelled.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"ms": map[string]any{"type": "number", "description": "how long to wait, in milliseconds"},
				},
			},
			Behavior: Sleep,
		},
		{
			Name:        "big",
			Description: "Returns a large text.",
			Behavior:    Big,
		},
		{
			Name:        "increment",
			Description: "Adds one to a counter and returns the new count.",
			Behavior:    Increment,
		},
	}
}

// schemaIsObject reports whether schema may be given to mcp.Server.AddTool.
func schemaIsObject(schema map[string]any) bool {
	return schema == nil || schema["type"] == "object"
}

// mcpTool converts spec to the tool the go-sdk registers.
func mcpTool(spec ToolSpec) *mcp.Tool {
	t := &mcp.Tool{
		Name:        spec.Name,
		Description: spec.Description,
		InputSchema: map[string]any{"type": "object"},
	}
	if spec.Annotations != nil {
		a := *spec.Annotations
		t.Annotations = &a
	}
	if spec.InputSchema != nil && schemaIsObject(spec.InputSchema) {
		t.InputSchema = spec.InputSchema
	}
	return t
}

// errReleased is returned by waits that end because the session or the
// server closed.
var errReleased = errors.New("mcptest: session closed")

// toolHandler returns the handler that runs spec's behavior on s.
func (s *Server) toolHandler(spec ToolSpec) mcp.ToolHandler {
	name := spec.Name
	behavior := spec.Behavior
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		s.countRun(name)
		defer func() {
			if err != nil && ctx.Err() != nil {
				s.countCancelled()
			}
		}()
		args, err := decodeArgs(req.Params.Arguments)
		if err != nil {
			return errorResult(fmt.Sprintf("tool %s: %v", name, err)), nil
		}
		switch behavior {
		case Echo, "":
			data, err := json.Marshal(args)
			if err != nil {
				return nil, err
			}
			return textResult(string(data)), nil
		case Fail:
			return errorResult(fmt.Sprintf("tool %s failed", name)), nil
		case InvalidParams:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params"}
		case Sleep:
			ms, ok := args["ms"].(float64)
			if _, present := args["ms"]; present && !ok {
				return errorResult(fmt.Sprintf("tool %s: ms must be a number", name)), nil
			}
			d := time.Duration(ms * float64(time.Millisecond))
			if err := s.wait(ctx, s.sessionOf(ctx, req.Session), d); err != nil {
				return nil, err
			}
			return textResult(fmt.Sprintf("slept %s ms", strconv.FormatFloat(ms, 'f', -1, 64))), nil
		case Big:
			return textResult(strings.Repeat("x", s.script.bigBytes())), nil
		case Add:
			a, okA := args["a"].(float64)
			b, okB := args["b"].(float64)
			if !okA || !okB {
				return errorResult(fmt.Sprintf("tool %s: arguments a and b must be numbers", name)), nil
			}
			return textResult(strconv.FormatFloat(a+b, 'f', -1, 64)), nil
		case Increment:
			return textResult(strconv.Itoa(s.increment())), nil
		case Hang:
			return nil, s.hang(ctx, s.sessionOf(ctx, req.Session))
		case Sample:
			return sample(ctx, req.Session, args), nil
		case Progress:
			res := progress(ctx, req, args)
			if args["hang"] == true {
				return nil, s.hang(ctx, s.sessionOf(ctx, req.Session))
			}
			return res, nil
		case AskInput:
			return askInput(req, args), nil
		case Elicit:
			return elicit(ctx, req.Session, args), nil
		case Roots:
			return roots(ctx, req.Session), nil
		default:
			return errorResult(fmt.Sprintf("tool %s: unknown behavior %q", name, behavior)), nil
		}
	}
}

// decodeArgs decodes raw tool arguments into a map. Absent or null
// arguments give an empty map.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object: %w", err)
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// sample is the Sample behavior.
func sample(ctx context.Context, ss *mcp.ServerSession, args map[string]any) *mcp.CallToolResult {
	text, _ := args["text"].(string)
	res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{
		MaxTokens: 10,
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	})
	if err != nil {
		return errorResult("sampling failed: " + err.Error())
	}
	if t, ok := res.Content.(*mcp.TextContent); ok {
		return textResult(t.Text)
	}
	return errorResult(fmt.Sprintf("sampling answered %T", res.Content))
}

// elicit is the Elicit behavior.
func elicit(ctx context.Context, ss *mcp.ServerSession, args map[string]any) *mcp.CallToolResult {
	params := &mcp.ElicitParams{Message: "who are you?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
	}}
	if url, _ := args["url"].(string); url != "" {
		params = &mcp.ElicitParams{Mode: "url", Message: "open this", URL: url, ElicitationID: "e1"}
	}
	res, err := ss.Elicit(ctx, params)
	if err != nil {
		return errorResult("elicitation failed: " + err.Error())
	}
	name, _ := res.Content["name"].(string)
	return textResult(strings.TrimSpace(res.Action + " " + name))
}

// roots is the Roots behavior.
func roots(ctx context.Context, ss *mcp.ServerSession) *mcp.CallToolResult {
	res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil {
		return errorResult("roots failed: " + err.Error())
	}
	uris := make([]string, len(res.Roots))
	for i, r := range res.Roots {
		uris[i] = r.URI
	}
	return textResult(strings.Join(uris, "\n"))
}

// askInput is the AskInput behavior.
func askInput(req *mcp.CallToolRequest, args map[string]any) *mcp.CallToolResult {
	answer, ok := req.Params.InputResponses["sample"]
	if !ok {
		text, _ := args["text"].(string)
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"sample": &mcp.CreateMessageParams{
			MaxTokens: 10,
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}}, RequestState: "asked"}
	}
	if req.Params.RequestState != "asked" {
		return errorResult(fmt.Sprintf("request state %q, want the one sent", req.Params.RequestState))
	}
	switch res := answer.(type) {
	case *mcp.CreateMessageResult:
		if t, ok := res.Content.(*mcp.TextContent); ok {
			return textResult(t.Text)
		}
	case *mcp.CreateMessageWithToolsResult:
		if len(res.Content) == 1 {
			if t, ok := res.Content[0].(*mcp.TextContent); ok {
				return textResult(t.Text)
			}
		}
	}
	return errorResult(fmt.Sprintf("input response %T", answer))
}

// progress is the Progress behavior.
func progress(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) *mcp.CallToolResult {
	steps := 2
	if n, ok := args["steps"].(float64); ok {
		steps = int(n)
	}
	token := req.Params.GetProgressToken()
	for i := range steps {
		if token != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: float64(steps)})
		}
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("step %d", i+1)})
	}
	return textResult("done")
}
