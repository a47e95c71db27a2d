package upstream

import (
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
)

// An http or sse server is reached at the origin of its url alone: its
// configured headers and its OAuth token are secrets meant for that origin,
// and a server must not be able to make the gateway send them, or send
// anything at all, elsewhere. Redirects are followed within the origin
// only, and a request for another origin (an SSE endpoint event that names
// one, say) is refused.

// maxRedirects is how many redirects within its origin a request follows,
// as net/http's default policy does.
const maxRedirects = 10

// An origin is the scheme, host and port of a URL, in lower case and with
// the scheme's port when the URL names none: "https://example.com:443".
type origin string

// originOf returns the origin of u.
func originOf(u *neturl.URL) origin {
	return origin(strings.ToLower(u.Scheme + "://" + hostPort(u)))
}

// errOtherOrigin means that a request of an http or sse server would have
// gone to another origin than that of its url.
var errOtherOrigin = errors.New("not the origin of the server's url")

// otherOrigin returns the error of a request for to that is refused: what
// would have gone there (a "request" or a "redirect") and to's origin, but
// never to's path, query or userinfo, which may carry anything.
func otherOrigin(what string, to *neturl.URL) error {
	return fmt.Errorf("%s to %s refused: %w", what, originOf(to), errOtherOrigin)
}

// redirectTarget returns where resp, an answer to req, redirects, if it
// is a redirect that net/http would follow; else nil.
func redirectTarget(req *http.Request, resp *http.Response) *neturl.URL {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil
	}
	to, err := req.URL.Parse(loc)
	if err != nil {
		return nil // net/http fails it the same way
	}
	return to
}

// checkRedirect is the CheckRedirect of an http or sse server's client,
// whose url's origin is home: a redirect within it is followed, up to
// maxRedirects. The round tripper refuses a redirect elsewhere before the
// client sees it (see roundTripper.send); this is the same rule where
// net/http applies its own.
func checkRedirect(home origin) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if originOf(req.URL) != home {
			return otherOrigin("redirect", req.URL)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
}
