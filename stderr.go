package switchboard

import "github.com/switchboard-mcp/switchboard/internal/upstream"

// ShortStderr returns msg, the message of a server's error, with only the
// last n of the lines of standard error it carries, and before them the
// first few that look like a cause, if it carries more; "…" marks the
// lines left out. The error of a stdio server that failed carries what its
// process wrote to stderr, after "; stderr: ", the lines separated by
// " | " in the order they were written: the first 3 lines that look like
// the statement of a cause ("Error: ...", "panic: ...", "... not set") and
// the last 20, with "…" where lines were left out. All of them suit a
// status page, and drown a log line.
func ShortStderr(msg string, n int) string { return upstream.ShortStderr(msg, n) }

// FitError returns msg, the message of a server's error, if it is at most
// width runes long; otherwise a shorter text followed by more (such as
// "…"), width runes long at most. The lines of standard error that msg
// carries (see [ShortStderr]) give way first, the oldest first, but for
// those that look like a cause, with "…" where they were; only then is the
// text cut.
func FitError(msg string, width int, more string) string { return upstream.FitError(msg, width, more) }

// WithoutStderr returns msg, the message of a server's error, without the
// lines of standard error it carries (see [ShortStderr]). The gateway
// tells its MCP clients why a request failed in these words: what a
// server prints is for its operator, in status and logs.
func WithoutStderr(msg string) string { return upstream.WithoutStderr(msg) }
