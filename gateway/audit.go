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

// AuditLog is the gateway's audit log: one JSON line a request that
// reaches a server (outcome ok or error) and one a request a policy
// refuses (outcome denied), each chained to the line before it by its
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
