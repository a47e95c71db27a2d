package upstream

import (
	"errors"
	neturl "net/url"
	"strings"
	"sync"

	"github.com/switchboard-mcp/switchboard/config"
)

// A redactor keeps what the errors and logs of one server must not show:
// the values substituted from the environment into its config, and its
// last resolved URL beyond its host and path. Its methods are safe for
// concurrent use.
type redactor struct {
	name    string
	secrets *config.Secrets

	mu  sync.Mutex
	url string // the last resolved URL; guarded by mu
}

// setURL records the URL the config resolved to.
func (r *redactor) setURL(url string) {
	r.mu.Lock()
	r.url = url
	r.mu.Unlock()
}

// lastURL returns the URL the config last resolved to, or "".
func (r *redactor) lastURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.url
}

// redact removes secrets from a message.
func (r *redactor) redact(msg string) string {
	if url := r.lastURL(); url != "" {
		display := config.RedactURL(url)
		msg = strings.ReplaceAll(msg, url, display)
		// net/http quotes URLs with the password masked as "***", and
		// url.URL.Redacted as "xxxxx", but both keep the rest.
		if parsed, err := neturl.Parse(url); err == nil && parsed.User != nil {
			masked := parsed.User.Username() + ":***@"
			msg = strings.ReplaceAll(msg, strings.Replace(parsed.String(), parsed.User.String()+"@", masked, 1), display)
			msg = strings.ReplaceAll(msg, parsed.Redacted(), display)
		}
	}
	return r.secrets.Redact(msg)
}

// errorf returns an *Error for op with a cause that carries no secret.
func (r *redactor) errorf(op string, err error) error {
	return &Error{Server: r.name, Op: op, Err: err}
}

// wrap returns an *Error for op, redacting err's message: substituted
// values and the server's URL beyond its host and path never appear in it.
func (r *redactor) wrap(op string, err error) error { return wrapError(r.name, r.redact, op, err) }

// wrapError is [redactor.wrap] for the server called server, whose
// messages redact scrubs. An *Error of that server is returned as it is.
func wrapError(server string, redact func(string) string, op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e.Server == server {
		return err
	}
	return &Error{Server: server, Op: op, Err: &redacted{err: err, msg: redact(err.Error())}}
}

// redacted is an error with a scrubbed message that still unwraps to its
// cause, so that errors.Is keeps working.
type redacted struct {
	err error
	msg string
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
