package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
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
	wait := durationFlag(fs, "wait", switchboard.DefaultLoginWait, "wait `D` at most for the browser to come back")
	name, err := nameArg(fs, args, "login")
	if err != nil {
		return err
	}
	if *wait <= 0 {
		return usageErrorf("login: --wait %v: want a positive duration", *wait)
	}
	cfg, err := e.load(paths, false, nil, config.Chain{}) // it starts no server
	if err != nil {
		return err
	}
	srv, err := loginServer(cfg, name)
	if err != nil {
		return err
	}
	opts := &switchboard.LoginOptions{
		Client: implementation(),
		Logger: e.logger(slog.LevelWarn),
		Wait:   *wait,
		Prompt: e.stderr,
	}
	if *noBrowser {
		opts.Open = func(string) error { return nil } // the printed URL is all
	}
	if *scopes != "" {
		opts.Scopes = strings.Split(*scopes, ",")
	}
	res, err := switchboard.Login(ctx, srv, opts)
	if err != nil {
		return err
	}
	tools := count(res.Tools, "tool")
	switch res.Outcome {
	case switchboard.LoginNotNeeded:
		fmt.Fprintf(e.stdout, "%s: needs no login (%s)\n", name, tools)
	case switchboard.LoginKept:
		fmt.Fprintf(e.stdout, "%s: already logged in (%s); to log in again, run: switchboard logout %s\n", name, tools, name)
	default:
		fmt.Fprintf(e.stdout, "%s: logged in (%s). A running gateway takes the login up within seconds.\n", name, tools)
	}
	return nil
}

// loginServer returns the server of cfg called name, or why there is none;
// [switchboard.Login] says what is wrong with one that does not log in.
func loginServer(cfg *config.Config, name string) (config.Server, error) {
	srv, ok := cfg.Lookup(name)
	if ok {
		return srv, nil
	}
	for _, r := range cfg.Rejected {
		if r.Name == name {
			return srv, fmt.Errorf("login %s: the config rejected it: %w", name, r.Err)
		}
	}
	return srv, fmt.Errorf("login %s: no server is configured as %s", name, name)
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
	forgot, err := switchboard.Logout(name, "")
	if err != nil {
		return err
	}
	if !forgot {
		fmt.Fprintf(e.stdout, "%s: no login stored\n", name)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: logged out; its tokens are forgotten\n", name)
	return nil
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
