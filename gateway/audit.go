package gateway

import (
	"io"

	"github.com/switchboard-mcp/switchboard/internal/audit"
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
