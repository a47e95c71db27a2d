//lint:file-ignore SA1019 The test server takes logging levels, which the gateway forwards.

package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PromptSpec describes one prompt. Getting it returns one user message:
// "PROMPT NAME" followed by its arguments as key=value pairs, sorted.
type PromptSpec struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Arguments   []string `json:"arguments,omitempty"` // names of required arguments
}

// ResourceSpec describes one resource. Reading it returns Text.
type ResourceSpec struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
	Text string `json:"text,omitempty"`
}

// TemplateSpec describes one resource template.
type TemplateSpec struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
}

// SetPrompts replaces the prompt list; connected clients get
// notifications/prompts/list_changed (debounced by the go-sdk).
func (s *Server) SetPrompts(prompts []PromptSpec) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.mu.Lock()
	old := s.prompts
	s.prompts = slices.Clone(prompts)
	s.mu.Unlock()
	if gone := removed(old, prompts, func(p PromptSpec) string { return p.Name }); len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	for _, p := range prompts {
		s.mcp.AddPrompt(mcpPrompt(p), promptHandler(p))
	}
}

// SetResources replaces the resource list; connected clients get
// notifications/resources/list_changed (debounced by the go-sdk).
func (s *Server) SetResources(resources []ResourceSpec) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.mu.Lock()
	old := s.resources
	s.resources = slices.Clone(resources)
	s.mu.Unlock()
	if gone := removed(old, resources, func(r ResourceSpec) string { return r.URI }); len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	for _, r := range resources {
		s.mcp.AddResource(&mcp.Resource{URI: r.URI, Name: r.Name, MIMEType: "text/plain"}, resourceHandler(r))
	}
}

// setTemplates registers the script's resource templates.
func (s *Server) setTemplates(templates []TemplateSpec) {
	for _, t := range templates {
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "template " + t.Name}}}, nil
			})
	}
}

// NotifyResourceUpdated sends notifications/resources/updated for uri to the
// sessions subscribed to it.
func (s *Server) NotifyResourceUpdated(uri string) error {
	return s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// Subscriptions returns the resource URIs that open sessions are subscribed
// to now, each once, sorted: for tests of subscribe and unsubscribe.
func (s *Server) Subscriptions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for ss, uris := range s.subs {
		if _, open := s.sessions[ss]; !open {
			continue // a session that ended holds no subscription
		}
		for uri := range uris {
			if !slices.Contains(out, uri) {
				out = append(out, uri)
			}
		}
	}
	slices.Sort(out)
	return out
}

func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	s.countSubscribe()
	if err := s.pass(ctx, &s.subscribeGate); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[req.Session] == nil {
		s.subs[req.Session] = make(map[string]bool)
	}
	s.subs[req.Session][req.Params.URI] = true
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs[req.Session], req.Params.URI)
	return nil
}

// FailListTools makes the next n tools/list requests fail with JSON-RPC
// -32603, for tests of reload retries.
func (s *Server) FailListTools(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLists = n
}

// BlockListTools holds every later tools/list until release is called, so
// that a test can act while a list is in flight. It returns release.
func (s *Server) BlockListTools() (release func()) { return s.block(&s.listGate) }

// BlockSubscribe holds every later resources/subscribe until release is
// called (or the request is cancelled): a server slow to subscribe. It
// returns release.
func (s *Server) BlockSubscribe() (release func()) { return s.block(&s.subscribeGate) }

// BlockSetLevel holds every later logging/setLevel until release is
// called (or the request is cancelled): a server slow to change its
// logging level. It returns release.
func (s *Server) BlockSetLevel() (release func()) { return s.block(&s.setLevelGate) }

// LoggingLevel returns the last logging level a client set, or "".
func (s *Server) LoggingLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// block sets *slot, guarded by s.mu, to a gate that release closes and
// clears.
func (s *Server) block(slot *chan struct{}) (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	*slot = gate
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if *slot == gate {
				*slot = nil
			}
			s.mu.Unlock()
			close(gate)
		})
	}
}

// pass waits for the gate in *slot, guarded by s.mu, if one is set, or
// until ctx is done.
func (s *Server) pass(ctx context.Context, slot *chan struct{}) error {
	s.mu.Lock()
	gate := *slot
	s.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listToolsFault applies FailListTools and BlockListTools to one tools/list.
func (s *Server) listToolsFault(ctx context.Context, sess *session) error {
	s.mu.Lock()
	gate := s.listGate
	fail := s.failLists > 0
	if fail {
		s.failLists--
	}
	s.mu.Unlock()
	if gate != nil {
		var sessDone <-chan struct{}
		if sess != nil {
			sessDone = sess.done
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		case <-sessDone:
			return errReleased
		case <-s.done:
			return errReleased
		}
	}
	if fail {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tools/list failed (FailListTools)"}
	}
	return nil
}

func mcpPrompt(p PromptSpec) *mcp.Prompt {
	prompt := &mcp.Prompt{Name: p.Name, Description: p.Description}
	for _, a := range p.Arguments {
		prompt.Arguments = append(prompt.Arguments, &mcp.PromptArgument{Name: a, Required: true})
	}
	return prompt
}

func promptHandler(p PromptSpec) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		text := "PROMPT " + p.Name
		keys := make([]string, 0, len(req.Params.Arguments))
		for k := range req.Params.Arguments {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			text += fmt.Sprintf(" %s=%s", k, req.Params.Arguments[k])
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
	}
}

func resourceHandler(r ResourceSpec) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, MIMEType: "text/plain", Text: r.Text}}}, nil
	}
}

// SetFlood replaces the script's Flood for the list requests that follow:
// a server whose lists turn hostile. Nil ends the flood. It sends no
// list_changed: see [Server.NotifyToolsChanged]. (The capabilities stay
// those of the script.)
func (s *Server) SetFlood(f *ListFlood) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flood = f
}

// floodedLists names the list of each list method, as ListFlood does.
var floodedLists = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "templates",
}

// floodPage answers a list request as the script's Flood says (see
// [ListFlood]); a list it does not flood is next's to answer. The first
// page is the server's own first page (its own cursor dropped) with the
// made-up items added; the pages after it are made up whole.
func (s *Server) floodPage(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	s.mu.Lock()
	f := s.flood
	s.mu.Unlock()
	list := floodedLists[method]
	if !f.floods(list) {
		return next(ctx, method, req)
	}
	// The params of every list hold its cursor alike; the go-sdk offers no
	// getter for it.
	var cursor struct{ Cursor string }
	if b, err := json.Marshal(req.GetParams()); err == nil {
		json.Unmarshal(b, &cursor)
	}
	pageNo := 0
	if cursor.Cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cursor.Cursor, "flood-"))
		if err != nil || !strings.HasPrefix(cursor.Cursor, "flood-") || n < 1 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown cursor"}
		}
		pageNo = n
	}
	var own mcp.Result
	if pageNo == 0 {
		var err error
		if own, err = next(ctx, method, req); err != nil {
			return nil, err
		}
	}
	nextCursor := ""
	if f.EndlessPages {
		nextCursor = "flood-" + strconv.Itoa(pageNo+1)
	}
	desc := strings.Repeat("x", max(f.ItemBytes, 0))
	items := max(f.Items, 1)
	name := func(i int) string { return fmt.Sprintf("flood_%d_%d", pageNo, i) }
	switch list {
	case "tools":
		r, ok := own.(*mcp.ListToolsResult)
		if !ok {
			r = &mcp.ListToolsResult{}
		}
		return &mcp.ListToolsResult{NextCursor: nextCursor, Tools: flooded(r.Tools, items, func(i int) *mcp.Tool {
			return &mcp.Tool{Name: name(i), Description: desc, InputSchema: map[string]any{"type": "object"}}
		})}, nil
	case "prompts":
		r, ok := own.(*mcp.ListPromptsResult)
		if !ok {
			r = &mcp.ListPromptsResult{}
		}
		return &mcp.ListPromptsResult{NextCursor: nextCursor, Prompts: flooded(r.Prompts, items, func(i int) *mcp.Prompt {
			return &mcp.Prompt{Name: name(i), Description: desc}
		})}, nil
	case "resources":
		r, ok := own.(*mcp.ListResourcesResult)
		if !ok {
			r = &mcp.ListResourcesResult{}
		}
		return &mcp.ListResourcesResult{NextCursor: nextCursor, Resources: flooded(r.Resources, items, func(i int) *mcp.Resource {
			return &mcp.Resource{URI: "flood://" + name(i), Name: name(i), Description: desc}
		})}, nil
	default:
		r, ok := own.(*mcp.ListResourceTemplatesResult)
		if !ok {
			r = &mcp.ListResourceTemplatesResult{}
		}
		return &mcp.ListResourceTemplatesResult{NextCursor: nextCursor, ResourceTemplates: flooded(r.ResourceTemplates, items, func(i int) *mcp.ResourceTemplate {
			return &mcp.ResourceTemplate{URITemplate: "flood://" + name(i) + "/{x}", Name: name(i), Description: desc}
		})}, nil
	}
}

// flooded returns own, the server's own items (on the first page), and n
// more that item makes.
func flooded[T any](own []T, n int, item func(i int) T) []T {
	out := slices.Clone(own)
	for i := range n {
		out = append(out, item(i))
	}
	return out
}
