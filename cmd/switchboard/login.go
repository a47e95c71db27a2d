package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/oauth"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// login logs in to one http or sse server that requires OAuth: it opens
// the browser on the authorization server's page, waits for the loopback
// redirect, and stores the token where serve and the other verbs find it.
// A stored login that the server still takes is kept.
func (e *env) login(ctx context.Context, args []string) error {
	var paths configPaths
	fs := e.flags("login", "NAME [--config F]... [--scopes S,...] [--no-browser] [--wait D]")
	fs.Var(&paths, "config", "config `file` (repeatable)")
	scopes := fs.String("scopes", "", "comma-separated `scopes` to ask for besides the usual ones (a step-up); logs in afresh")
	noBrowser := fs.Bool("no-browser", false, "print the URL to open; start no browser")
	wait := fs.Duration("wait", oauth.DefaultLoginWait, "how long to wait for the browser to come back")
	name, err := nameArg(fs, args, "login")
	if err != nil {
		return err
	}
	if *wait <= 0 {
		return usageErrorf("login: --wait %v: want a positive duration", *wait)
	}
	cfg, err := e.loadConfig(paths, false)
	if err != nil {
		return err
	}
	srv, err := loginServer(cfg, name)
	if err != nil {
		return err
	}
	store, err := tokenStore()
	if err != nil {
		return err
	}
	port := 0
	if srv.OAuth != nil {
		port = srv.OAuth.CallbackPort
	}
	loop, err := oauth.ListenLoopback(port)
	if err != nil {
		return fmt.Errorf("login %s: %w", name, err)
	}
	defer loop.Close()
	open := oauth.Browser(e.stderr)
	if *noBrowser {
		open = oauth.PrintURL(e.stderr)
	}
	fetch := loop.Fetcher(open, *wait)
	var (
		mu     sync.Mutex
		asked  bool
		failed error
	)
	login := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if failed != nil {
			// go-sdk tries a second handshake when the first fails: one
			// login that did not come back is enough.
			return nil, failed
		}
		asked = true
		res, err := fetch(ctx, args)
		failed = err
		return res, err
	}
	// The browser takes its time: the login is bounded by --wait and the
	// server's timeout, not by the latter alone.
	ctx, cancel := context.WithTimeout(ctx, *wait+srv.TimeoutDuration())
	defer cancel()
	none := int64(0)
	srv.Timeout, srv.Enabled = &none, nil
	var extra []string
	if *scopes != "" {
		extra = strings.Split(*scopes, ",")
	}
	u := upstream.New(srv, &upstream.Options{
		Client: implementation(),
		Logger: e.logger(slog.LevelWarn),
		OAuth:  &oauth.Options{Store: store, RedirectURL: loop.RedirectURL, Login: login, Scopes: extra},
	})
	defer u.Close()
	if err := u.Connect(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("login %s: no answer within %v: %w", name, *wait+srv.TimeoutDuration(), err)
		}
		return fmt.Errorf("login %s: %w", name, err)
	}
	tools := count(len(u.Snapshot().Tools), "tool")
	mu.Lock()
	defer mu.Unlock()
	switch {
	case !asked && u.LoginStamp() == "":
		fmt.Fprintf(e.stdout, "%s: needs no login (%s)\n", name, tools)
		return nil
	case !asked:
		fmt.Fprintf(e.stdout, "%s: already logged in (%s); to log in again, run: switchboard logout %s\n", name, tools, name)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: logged in (%s). A running gateway takes the login up within seconds.\n", name, tools)
	return nil
}

// loginServer returns the server of cfg called name, if it logs in: an
// http or sse server whose config does not set its Authorization header.
func loginServer(cfg *config.Config, name string) (config.Server, error) {
	srv, ok := cfg.Lookup(name)
	if !ok {
		for _, r := range cfg.Rejected {
			if r.Name == name {
				return srv, fmt.Errorf("login %s: the config rejected it: %w", name, r.Err)
			}
		}
		return srv, fmt.Errorf("login %s: no server is configured as %s", name, name)
	}
	switch {
	case srv.TransportType() == config.Stdio:
		return srv, fmt.Errorf("login %s: it is a local command (stdio): there is nothing to log in to", name)
	case !srv.LogsIn():
		return srv, fmt.Errorf("login %s: its config sets the Authorization header (in %s), which it uses instead of a login", name, srv.Source)
	}
	return srv, nil
}

// logout forgets the stored login of a server, whatever its URL was.
func (e *env) logout(_ context.Context, args []string) error {
	fs := e.flags("logout", "NAME")
	var paths configPaths
	fs.Var(&paths, "config", "accepted, and not needed: logins are stored by server name")
	name, err := nameArg(fs, args, "logout")
	if err != nil {
		return err
	}
	store, err := tokenStore()
	if err != nil {
		return err
	}
	n, err := store.Forget(name)
	if err != nil {
		return fmt.Errorf("logout %s: %w", name, err)
	}
	if n == 0 {
		fmt.Fprintf(e.stdout, "%s: no login stored\n", name)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: logged out; its tokens are forgotten\n", name)
	return nil
}

// tokenStore is the store of the logins, which serve reads too.
func tokenStore() (*oauth.Store, error) {
	dir, err := oauth.DefaultDir()
	if err != nil {
		return nil, err
	}
	return &oauth.Store{Dir: dir}, nil
}

// nameArg parses the flags of a verb that takes one NAME, before it or
// after it, and returns the name.
func nameArg(fs *flag.FlagSet, args []string, verb string) (string, error) {
	if err := parse(fs, args); err != nil {
		return "", err
	}
	switch fs.NArg() {
	case 0:
		return "", usageErrorf("%s: want the NAME of a server", verb)
	case 1:
		return fs.Arg(0), nil
	}
	return "", usageErrorf("%s: unexpected argument %q", verb, fs.Arg(1))
}
