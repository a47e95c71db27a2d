package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// DefaultLoginWait bounds the wait for the browser to come back from a
// login.
const DefaultLoginWait = 5 * time.Minute

// A Loopback receives the redirect of a login on a loopback port.
type Loopback struct {
	// RedirectURL is where the authorization server sends the browser back.
	RedirectURL string

	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	waiting *awaited // the login under way, or nil
}

// awaited is a login that waits for its redirect.
type awaited struct {
	state   string        // the authorization request's ("": it had none)
	results chan redirect // buffered, 1: the first of its redirects counts
}

// redirect is what came back on the redirect URL.
type redirect struct {
	code, state, iss string
	err              error
}

// ListenLoopback listens for a login's redirect on 127.0.0.1:port, or on a
// free port if port is 0. Close ends it.
func ListenLoopback(port int) (*Loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("oauth: listening for the login's redirect: %w", err)
	}
	l := &Loopback{
		RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port),
		ln:          ln,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", l.callback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go l.srv.Serve(ln)
	return l, nil
}

// Close stops listening.
func (l *Loopback) Close() error { return l.srv.Close() }

func (l *Loopback) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	got := redirect{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	page := "Logged in. You can close this tab and return to the terminal."
	if e := q.Get("error"); e != "" || got.code == "" {
		if e == "" {
			e = "no authorization code"
		}
		// Quoted: the text is the browser's, and goes to a terminal.
		got.err = fmt.Errorf("the authorization server refused the login: %q", e)
		page = "The login failed: " + e + ". See the terminal."
	}
	// Only the login under way takes a redirect, and only one with its
	// state: one of another login (an older tab, a forged link) neither
	// ends nor fails it.
	l.mu.Lock()
	cur := l.waiting
	ours := cur != nil && got.state == cur.state
	if ours {
		select {
		case cur.results <- got:
		default: // a second redirect: the first one counts
		}
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if !ours {
		w.WriteHeader(http.StatusBadRequest)
		page = "This is not the login switchboard is waiting for: finish the latest one."
	}
	fmt.Fprintf(w, "<!doctype html><title>switchboard login</title><p>%s</p>\n", html.EscapeString(page))
}

// Fetcher returns the flow's step that sends the user to the
// authorization URL with open, and waits, at most wait, for the redirect.
// It serves one login at a time.
func (l *Loopback) Fetcher(open func(url string) error, wait time.Duration) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		cur := &awaited{results: make(chan redirect, 1)}
		if u, err := url.Parse(args.URL); err == nil {
			cur.state = u.Query().Get("state")
		}
		l.mu.Lock()
		l.waiting = cur
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			if l.waiting == cur {
				l.waiting = nil
			}
			l.mu.Unlock()
		}()
		if err := open(args.URL); err != nil {
			return nil, err
		}
		return awaitRedirect(ctx, cur.results, wait)
	}
}

// errNoRedirect means the browser never came back.
var errNoRedirect = errors.New("oauth: the login's redirect never came back")

// awaitRedirect waits for the redirect, at most wait.
func awaitRedirect(ctx context.Context, results <-chan redirect, wait time.Duration) (*auth.AuthorizationResult, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-results:
		if r.err != nil {
			return nil, r.err
		}
		return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
	case <-timer.C:
		return nil, fmt.Errorf("%w within %v: finish the login in the browser sooner, or run the login again", errNoRedirect, wait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Browser returns how to send the user to a URL: the first command that
// starts of those in $BROWSER, then the system's opener, if there is one.
// It always prints the URL to w, for a machine without a browser.
func Browser(w io.Writer) func(url string) error {
	show := PrintURL(w)
	return func(url string) error {
		show(url)
		commands := browserCommands(os.Getenv("BROWSER"), url)
		if opener := systemOpener(); opener != "" {
			commands = append(commands, []string{opener, url})
		}
		startFirst(w, commands)
		return nil
	}
}

// startFirst starts the first of commands that starts, and returns it (nil:
// none did). It tells w of each that did not.
func startFirst(w io.Writer, commands [][]string) []string {
	for _, argv := range commands {
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(w, "(could not start %s: %v)\n", argv[0], err)
			continue
		}
		go cmd.Wait()
		return argv
	}
	return nil
}

// browserCommands reads $BROWSER as the convention has it: a list of
// commands separated by colons, to try in order, each given the URL in
// place of a "%s", or after its last argument if it has none.
func browserCommands(browser, url string) [][]string {
	var commands [][]string
	for entry := range strings.SplitSeq(browser, string(os.PathListSeparator)) {
		argv := strings.Fields(entry)
		if len(argv) == 0 {
			continue
		}
		placed := false
		for i, arg := range argv {
			if strings.Contains(arg, "%s") {
				argv[i], placed = strings.ReplaceAll(arg, "%s", url), true
			}
		}
		if !placed {
			argv = append(argv, url)
		}
		commands = append(commands, argv)
	}
	return commands
}

// PrintURL returns how to send the user to a URL on a machine without a
// browser: print it to w.
func PrintURL(w io.Writer) func(url string) error {
	return func(url string) error {
		fmt.Fprintf(w, "Open this URL in a browser to log in:\n\n  %s\n\n", url)
		return nil
	}
}

// systemOpener is the command that opens a URL here, or "".
func systemOpener() string {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	return ""
}
