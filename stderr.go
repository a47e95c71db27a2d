package switchboard

import "github.com/switchboard-mcp/switchboard/internal/upstream"

// ShortStderr returns msg, the message of a server's error, with only the
// last n of the lines of standard error it carries, after "…", if it
// carries more. The error of a stdio server that failed carries the last
// lines its process wrote to stderr, after "; stderr: " and separated by
// " | ": all of them suit a status page, and drown a log line.
func ShortStderr(msg string, n int) string { return upstream.ShortStderr(msg, n) }
