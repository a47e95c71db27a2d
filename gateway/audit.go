package gateway

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/audit"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// AuditBreak says where an audit log's chain breaks: at Line (1-based) of
// File, and why. [VerifyAuditLog] and [VerifyAuditFiles] return it.
type AuditBreak = audit.BreakError

// AuditMaxLine bounds the length of an audit log's line, in bytes: a longer
// line is an [AuditBreak].
const AuditMaxLine = audit.MaxLine

// VerifyAuditLog reads one file of an audit log, as the gateway writes
// it, from r and checks the hash chain of its lines. It returns the number
// of lines, and a *[AuditBreak] naming the first line that is edited,
// inserted, after a deletion, truncated, not JSON or longer than
// [AuditMaxLine]; or the read error. A rotated file, whose first line
// continues a file before it, verifies on its own. (An edit or deletion of
// the last lines alone leaves no trace but against an anchor: see
// [VerifyAuditFiles].)
func VerifyAuditLog(r io.Reader) (lines int, err error) {
	return audit.Verify(r)
}

// AuditGenesis is the prev of an audit log's first line: 64 zeros.
const AuditGenesis = audit.Genesis

// AuditFile is one file of an audit log, by name, for [VerifyAuditFiles].
type AuditFile = audit.Source

// AuditSummary describes the chain that [VerifyAuditFiles] read: its
// lines, where it starts, and its last line as an anchor.
type AuditSummary = audit.Summary

// AuditAnchor names a line of an audit log by its seq and hash: kept
// elsewhere, it shows later that no line up to it was deleted or edited.
type AuditAnchor = audit.Anchor

// ParseAuditAnchor reads an anchor written "SEQ:HASH" (as
// [AuditAnchor.String] writes it) or "HASH".
func ParseAuditAnchor(s string) (AuditAnchor, error) { return audit.ParseAnchor(s) }

// VerifyAuditFiles checks the hash chain of an audit log kept in several
// files, oldest first (audit.jsonl.2, audit.jsonl.1, audit.jsonl): each
// file's chain, and that each file's first line continues the last line of
// the file before it. The first file may be a rotated one: the summary
// says where it starts. With an anchor, the lines must also hold it, or
// continue from it. It returns a *[AuditBreak] naming the first file and
// line that breaks the chain, or a read error.
func VerifyAuditFiles(files []AuditFile, anchor *AuditAnchor) (AuditSummary, error) {
	return audit.VerifyFiles(files, anchor)
}

// AuditLog is the gateway's audit log: one JSON line a request for a
// server's tool, prompt, resource or completion (outcome ok or error) and
// one a request a policy refuses (outcome denied), each chained to the line before it by its
// hash, across rotated files too. It never holds up a request: a slow or
// failing file loses lines, logged, rather than make a request wait. Set
// it as Options.AuditLog; the host closes it after the gateway.
type AuditLog = audit.Log

// AuditLogOptions configure an [AuditLog]: its logger and its rotation
// (MaxBytes 0, the default, never rotates).
type AuditLogOptions = audit.Options

// OpenAuditLog opens the audit log at path ("-" for standard output) for
// appending, created with mode 0600, its chain continuing from the file's
// last line (from path.1's if the file is empty). A nil opts is the zero
// AuditLogOptions.
func OpenAuditLog(path string, opts *AuditLogOptions) (*AuditLog, error) {
	return audit.Open(path, opts)
}

// audited returns a func, to defer, that writes the audit log's line, if
// there is a log, of a request of method, req, for item (a tool, prompt or
// URI, as kind says), started now, which ended with *res and *err (res may
// be nil).
func audited[R any](f *forwarder, req mcp.Request, method, kind, item string, res *R, err *error) func() {
	if f.audit == nil {
		return func() {}
	}
	start := time.Now()
	return func() {
		var result any
		if res != nil {
			result = *res
		}
		f.record(req, method, kind, item, start, result, *err)
	}
}

// auditedComplete is audited for a completion/complete: of a prompt, or of
// a resource template's URI.
func auditedComplete(f *forwarder, req *mcp.CompleteRequest, res **mcp.CompleteResult, err *error) func() {
	kind, item := completeTarget(req.Params.Ref)
	return audited(f, req, "completion/complete", kind, item, res, err)
}

// completeTarget is the kind and item of a completion's ref, as the audit
// log names them.
func completeTarget(ref *mcp.CompleteReference) (kind, item string) {
	switch {
	case ref == nil:
		return "", ""
	case ref.Type == "ref/prompt":
		return kindNamePrompt, ref.Name
	default:
		return kindNameResource, ref.URI
	}
}

// auditedByURI returns h, the handler of requests of method about the
// resource that uri names (resources/subscribe, resources/unsubscribe),
// writing an audit log line for each request.
func auditedByURI[R mcp.Request](f *forwarder, method string, uri func(R) string, h func(context.Context, R) error) func(context.Context, R) error {
	if f.audit == nil {
		return h
	}
	return func(ctx context.Context, req R) (err error) {
		defer audited[any](f, req, method, kindNameResource, uri(req), nil, &err)()
		return h(ctx, req)
	}
}

// record writes one line of the audit log for a request of method, req,
// for item (a tool, prompt or URI, as kind says), started at start, which
// ended with err, or with result (a *mcp.CallToolResult that may be
// isError, say). An err of notPermitted is the outcome denied; the log,
// unlike the caller, gets the server. The request's arguments and result
// are written only for a server marked auditPayloads, redacted.
func (f *forwarder) record(req mcp.Request, method, kind, item string, start time.Time, result any, err error) {
	e := audit.Entry{Time: start, Method: method, Duration: time.Since(start), Outcome: audit.OK}
	h := hooks.Of(f.m)
	switch kind {
	case kindNameTool:
		e.Tool = item
		if t, ok := f.m.Lookup(item); ok {
			e.Server = t.Server
		}
	case kindNamePrompt:
		e.Prompt, e.Server = item, serverOfPrompt(f.m, item)
	case kindNameResource:
		e.URI, e.Server = item, h.ResourceServer(item)
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		e.Session = ss.ID()
	}
	if q := f.sessions.query(req); q != nil {
		if id, ok := q.Extra[switchboard.IdentityKey].(*identity.Identity); ok && id != nil {
			e.Subject, e.Client = id.Subject, id.Client
		}
	}
	tool, _ := result.(*mcp.CallToolResult)
	isError := tool != nil && tool.IsError
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil && !isError:
	case err == nil:
		e.Outcome, e.ErrorClass = audit.Error, "tool_error"
	case isRateLimited(err):
		e.Outcome, e.ErrorClass = audit.Denied, "rate_limited"
	case errors.As(err, &rpcErr) && rpcErr.Error() == notPermitted(kind, item).Error():
		e.Outcome, e.ErrorClass = audit.Denied, "not_permitted"
	case errors.Is(err, context.Canceled):
		e.Outcome, e.ErrorClass = audit.Error, "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		e.Outcome, e.ErrorClass = audit.Error, "timeout"
	case errors.As(err, &rpcErr):
		e.Outcome, e.ErrorClass = audit.Error, "rpc_"+strconv.FormatInt(rpcErr.Code, 10)
	default:
		e.Outcome, e.ErrorClass = audit.Error, "server"
	}
	if e.Server != "" && h.AuditPayloads(e.Server) {
		e.Arguments = auditArguments(req)
		if err == nil {
			e.Result = auditResult(result)
		}
	}
	f.audit.Record(e)
}

// auditArguments returns the arguments of req, redacted, for a server
// marked auditPayloads: a tool's, a prompt's, a completion's argument and
// context; nil for none.
func auditArguments(req mcp.Request) any {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		return audit.RedactJSON(r.Params.Arguments)
	case *mcp.GetPromptRequest:
		if len(r.Params.Arguments) == 0 {
			return nil
		}
		return audit.Redact(stringsToAny(r.Params.Arguments))
	case *mcp.CompleteRequest:
		args := map[string]any{r.Params.Argument.Name: r.Params.Argument.Value}
		if c := r.Params.Context; c != nil && len(c.Arguments) > 0 {
			args = map[string]any{"argument": args, "context": stringsToAny(c.Arguments)}
		}
		return audit.Redact(args)
	}
	return nil
}

func stringsToAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// auditResult returns what the audit log keeps of a result, for a server
// marked auditPayloads: its text, redacted and cut, and isError; nil for
// none.
func auditResult(result any) *audit.Result {
	var texts []string
	isError := false
	switch r := result.(type) {
	case *mcp.CallToolResult:
		if r == nil {
			return nil
		}
		isError = r.IsError
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, t.Text)
			}
		}
	case *mcp.GetPromptResult:
		if r == nil {
			return nil
		}
		for _, m := range r.Messages {
			if t, ok := m.Content.(*mcp.TextContent); ok {
				texts = append(texts, t.Text)
			}
		}
	case *mcp.ReadResourceResult:
		if r == nil {
			return nil
		}
		for _, c := range r.Contents {
			if c != nil && c.Text != "" {
				texts = append(texts, c.Text)
			}
		}
	case *mcp.CompleteResult:
		if r == nil {
			return nil
		}
		texts = r.Completion.Values
	default:
		return nil
	}
	return &audit.Result{Text: audit.RedactTexts(texts), IsError: isError}
}

// serverOfPrompt names the server of the prompt with the public name, or
// "" if there is none.
func serverOfPrompt(m *switchboard.Manager, name string) string {
	for _, p := range m.Prompts(hooks.Unfiltered(context.Background()), nil) {
		if p.Name == name {
			return p.Server
		}
	}
	return ""
}
