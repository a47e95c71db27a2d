package switchboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// DefaultLoginWait bounds how long [Login] waits for the browser to come
// back, unless [LoginOptions.Wait] says otherwise.
const DefaultLoginWait = oauth.DefaultLoginWait

// LoginOptions configure [Login]. A nil *LoginOptions means all defaults;
// a zero field means that field's default.
type LoginOptions struct {
	// Client identifies Switchboard to the server. Default: name
	// "switchboard", version "dev".
	Client *mcp.Implementation
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// LookupEnv resolves ${VAR} in the server's config. Default:
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// OAuthDir is the directory of the tokens, as in [Options.OAuthDir],
	// and with the same default: a Manager given the same one takes the
	// login up.
	OAuthDir string
	// Scopes are scopes to ask for besides those the config or the server
	// names (a step-up's). They make the login a fresh one: a stored login
	// is not used.
	Scopes []string
	// Wait bounds the wait for the browser to come back. Default:
	// DefaultLoginWait.
	Wait time.Duration
	// Prompt receives the URL that the user opens to log in, and what went
	// wrong starting a browser. Default: os.Stderr.
	Prompt io.Writer
	// Open, if set, sends the user to the URL once it is printed to Prompt,
	// instead of the browser: the first command of $BROWSER that starts,
	// else the system's opener.
	Open func(url string) error
}

// A LoginOutcome says what [Login] found.
type LoginOutcome int

const (
	// LoginNotNeeded: the server took the connection without a login.
	LoginNotNeeded LoginOutcome = iota
	// LoginKept: a stored login, which the server still takes, was kept.
	LoginKept
	// LoginStored: the user logged in, and the token is stored.
	LoginStored
)

// String returns "not needed", "kept" or "stored".
func (o LoginOutcome) String() string {
	switch o {
	case LoginNotNeeded:
		return "not needed"
	case LoginKept:
		return "kept"
	case LoginStored:
		return "stored"
	}
	return fmt.Sprintf("LoginOutcome(%d)", int(o))
}

// A LoginResult is what [Login] did, and what the server offers once
// logged in.
type LoginResult struct {
	Outcome LoginOutcome
	// Tools is how many tools the server listed.
	Tools int
}

// Login logs in to srv, an http or sse server that requires OAuth, as
// `switchboard login` does. It connects to the server, once; if the server
// asks for a login that no stored token answers, Login sends the user to
// the authorization server's page (see [LoginOptions.Open]), waits for its
// redirect on a loopback port (srv's oauth callbackPort, or a free one)
// and stores the token, where a Manager with the same
// [Options.OAuthDir] finds it: a running one takes it up within seconds.
// A stored login that the server still takes is kept.
//
// The login is bounded by ctx, and by the wait for the browser plus the
// server's timeout. Its errors start with "login NAME: ". A stdio server,
// or one whose config sets the Authorization header, is refused: it has
// nothing to log in to.
func Login(ctx context.Context, srv config.Server, opts *LoginOptions) (LoginResult, error) {
	var o LoginOptions
	if opts != nil {
		o = *opts
	}
	if o.Wait <= 0 {
		o.Wait = DefaultLoginWait
	}
	if o.Prompt == nil {
		o.Prompt = os.Stderr
	}
	fail := func(err error) (LoginResult, error) {
		return LoginResult{}, fmt.Errorf("login %s: %w", srv.Name, err)
	}
	switch {
	case srv.TransportType() == config.Stdio:
		return fail(errors.New("it is a local command (stdio): there is nothing to log in to"))
	case !srv.LogsIn():
		return fail(fmt.Errorf("its config sets the Authorization header (in %s), which it uses instead of a login", srv.Source))
	}
	if err := srv.Validate(); err != nil {
		return fail(err)
	}
	store, err := tokenStore(o.OAuthDir)
	if err != nil {
		return fail(err)
	}
	port := 0
	if srv.OAuth != nil {
		port = srv.OAuth.CallbackPort
	}
	loop, err := oauth.ListenLoopback(port)
	if err != nil {
		return fail(err)
	}
	defer loop.Close()
	fetch := newOnceFetcher(loop.Fetcher(o.opener(), o.Wait))
	// The browser takes its time: the login is bounded by the wait and the
	// server's timeout, not by the latter alone.
	bound := o.Wait + srv.TimeoutDuration()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	none := int64(0)
	srv.Timeout, srv.Enabled = &none, nil
	u := upstream.New(srv, &upstream.Options{
		Client:    o.Client,
		Logger:    o.Logger,
		LookupEnv: o.LookupEnv,
		OAuth:     &oauth.Options{Store: store, RedirectURL: loop.RedirectURL, Login: fetch.login, Scopes: o.Scopes},
	})
	defer u.Close(time.Time{})
	if err := u.Connect(ctx); err != nil {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("no answer within %v: %w", bound, err))
		}
		return fail(err)
	}
	res := LoginResult{Tools: len(u.Snapshot().Tools)}
	switch {
	case fetch.asked():
		res.Outcome = LoginStored
	case u.LoginStamp() != "":
		res.Outcome = LoginKept
	}
	return res, nil
}

// opener returns how Login sends the user to the URL: it prints it to
// Prompt, then opens it with Open or the browser.
func (o *LoginOptions) opener() func(url string) error {
	if o.Open == nil {
		return oauth.Browser(o.Prompt)
	}
	show := oauth.PrintURL(o.Prompt)
	return func(url string) error {
		show(url)
		return o.Open(url)
	}
}

// An onceFetcher runs the browser's part of a login at most once: go-sdk
// tries a second handshake when the first fails, and one login that did
// not come back is enough. Logins take turns, waiting within their
// contexts; no lock is held while the browser is out.
type onceFetcher struct {
	fetch auth.AuthorizationCodeFetcher
	turn  chan struct{} // buffered, 1: held by the login in progress
	tried atomic.Bool

	failed error // guarded by turn
}

func newOnceFetcher(fetch auth.AuthorizationCodeFetcher) *onceFetcher {
	return &onceFetcher{fetch: fetch, turn: make(chan struct{}, 1)}
}

func (f *onceFetcher) login(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	select {
	case f.turn <- struct{}{}:
		defer func() { <-f.turn }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.failed != nil {
		return nil, f.failed
	}
	f.tried.Store(true)
	res, err := f.fetch(ctx, args)
	f.failed = err
	return res, err
}

// asked reports whether the user was sent to log in.
func (f *onceFetcher) asked() bool { return f.tried.Load() }

// Logout forgets the stored login of the server called name, whatever its
// URL was, from dir, the directory of the tokens ("": the default, as in
// [Options.OAuthDir]). It reports whether there was one.
func Logout(name, dir string) (bool, error) {
	store, err := tokenStore(dir)
	if err != nil {
		return false, fmt.Errorf("logout %s: %w", name, err)
	}
	n, err := store.Forget(name)
	if err != nil {
		return false, fmt.Errorf("logout %s: %w", name, err)
	}
	return n > 0, nil
}

// tokenStore is the store of the tokens in dir, or in the default
// directory.
func tokenStore(dir string) (*oauth.Store, error) {
	if dir == "" {
		var err error
		if dir, err = oauth.DefaultDir(); err != nil {
			return nil, err
		}
	}
	return &oauth.Store{Dir: dir}, nil
}
