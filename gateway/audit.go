package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/audit"
	"github.com/switchboard-mcp/switchboard/internal/hooks"
	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// AuditBreak says where an audit log's chain breaks: at Line (1-based), and
// why. [VerifyAuditLog] returns it.
type AuditBreak = audit.BreakError

// AuditMaxLine bounds the length of an audit log's line, in bytes: a longer
// line is an [AuditBreak].
const AuditMaxLine = audit.MaxLine

// VerifyAuditLog reads an audit log, as the gateway writes it, from r and
// checks the hash chain of its lines. It returns the number of lines, and
// a *[AuditBreak] naming the first line that is edited, inserted, after a
// deletion, truncated, not JSON or longer than [AuditMaxLine]; or the read
// error. (An edit or deletion of the last lines alone leaves no trace:
// no line after them vouches for them.)
func VerifyAuditLog(r io.Reader) (lines int, err error) {
	return audit.Verify(r)
}

// AuditLog is the gateway's audit log: one JSON line a request that
// reaches a server (tools/call: outcome ok or error) and one a request a
// policy refuses (outcome denied), each chained to the line before it by
// its hash. It never holds up a request: a slow or failing file loses
// lines, logged, rather than make a request wait. Set it as
// Options.AuditLog; the host closes it after the gateway.
type AuditLog = audit.Log

// OpenAuditLog opens the audit log at path ("-" for standard output) for
// appending, created with mode 0600, its chain continuing from the file's
// last line. A nil logger is slog.Default().
func OpenAuditLog(path string, logger *slog.Logger) (*AuditLog, error) {
	return audit.Open(path, logger)
}

// record writes one line of the audit log, if there is one, for a request
// of method, by the session of req, for item (a tool, prompt or URI, as
// kind says) of server ("" when unknown), started at start, which ended
// with err, or with a result that isError. An err of notPermitted is the
// outcome denied; the log, unlike the caller, gets the server.
func (f *forwarder) record(req mcp.Request, method, kind, item, server string, start time.Time, isError bool, err error) {
	if f.audit == nil {
		return
	}
	e := audit.Entry{Time: start, Server: server, Method: method, Duration: time.Since(start), Outcome: audit.OK}
	switch kind {
	case kindNameTool:
		e.Tool = item
	case kindNamePrompt:
		e.Prompt = item
	default:
		e.URI = item
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		e.Session = ss.ID()
	}
	if q := f.sessions.query(req); q != nil {
		if id, ok := q.Extra[switchboard.IdentityKey].(*identity.Identity); ok && id != nil {
			e.Subject, e.Client = id.Subject, id.Client
		}
	}
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil && !isError:
	case err == nil:
		e.Outcome, e.ErrorClass = audit.Error, "tool_error"
	case errors.As(err, new(*rateLimited)):
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
	f.audit.Record(e)
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
