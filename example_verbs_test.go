package switchboard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// A log line shows the last of the stderr lines a server's error carries,
// and before them those that state a cause.
func ExampleShortStderr() {
	msg := `server "db": session: process exited; stderr: starting | reading config | no password for user "app"`
	fmt.Println(switchboard.ShortStderr(msg, 1))
	msg = `server "db": connect: process exited with status 2; stderr: Error: DATABASE_URL not set | Usage: db-server [flags] | … |   --verbose  log every query | Run db-server --help for more`
	fmt.Println(switchboard.ShortStderr(msg, 1))
	// Output:
	// server "db": session: process exited; stderr: … | no password for user "app"
	// server "db": connect: process exited with status 2; stderr: Error: DATABASE_URL not set | … | Run db-server --help for more
}

// A table cuts a long error to its width, keeping the cause.
func ExampleFitError() {
	msg := `server "db": connect: process exited with status 2; stderr: Error: DATABASE_URL not set | Usage: db-server [flags] | … |   --verbose  log every query | Run db-server --help for more`
	fmt.Println(switchboard.FitError(msg, 100, " …"))
	// Output: server "db": connect: process exited with status 2; stderr: Error: DATABASE_URL not set …
}

// A host that calls one tool narrows the config to the servers that may
// own it, and starts no other.
func ExampleForTool() {
	cfg, err := config.Parse("mcp.json", []byte(`{
		"mcpServers": {
			"github": {"command": "github-server"},
			"files": {"command": "files-server"},
			"search": {"command": "search-server", "prefix": ""}, // unprefixed: may own any name
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range switchboard.ForTool(cfg, "github__create_issue").Servers {
		fmt.Println(s.Name)
	}
	// Unordered output:
	// github
	// search
}

// approve is a browser that approves a login at once: it asks for the
// authorization URL and follows its redirect to the login's listener.
func approve(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// A host logs in to a server that requires OAuth, and a Manager with the
// same OAuthDir connects with the token. Here the authorization server
// approves at once, and the browser follows its redirect.
func ExampleLogin() {
	server := mcptest.NewServer(mcptest.Script{})
	defer server.Close()
	auth := mcptest.NewAuthServer(map[string]http.Handler{"/mcp": server.Handler()})
	defer auth.Close()
	dir, err := os.MkdirTemp("", "oauth")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	tracker := config.Server{Name: "tracker", Type: config.HTTP, URL: auth.URL + "/mcp"}
	opts := &switchboard.LoginOptions{OAuthDir: dir, Prompt: io.Discard, Open: approve}
	for range 2 { // the second login keeps the first one's token
		res, err := switchboard.Login(context.Background(), tracker, opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("login %s (%d tools)\n", res.Outcome, res.Tools)
	}
	m := switchboard.New(&config.Config{Servers: []config.Server{tracker}}, &switchboard.Options{OAuthDir: dir, Cache: switchboard.CacheOff, StartupGate: -1})
	if err := m.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("tools through the manager:", len(m.Tools(context.Background(), nil)))
	m.Close()
	forgot, err := switchboard.Logout("tracker", dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("logged out:", forgot)
	// Output:
	// login stored (6 tools)
	// login kept (6 tools)
	// tools through the manager: 6
	// logged out: true
}
