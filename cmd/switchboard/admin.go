package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// reconnect asks a running gateway to reconnect one server now, which also
// ends a crash loop, and prints the server's state after the attempt. It
// exits 1 unless the server is connected.
func (e *env) reconnect(ctx context.Context, args []string) error {
	fs := e.flags("reconnect", "NAME [--gateway URL] [--auth-token-env NAME]")
	gateway := fs.String("gateway", "http://127.0.0.1:7777", "the running gateway's `URL`")
	tokenEnv := fs.String("auth-token-env", "", "send 'Authorization: Bearer TOKEN', with TOKEN read from the environment variable `NAME`")
	// Flags may come before the name or after it.
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("reconnect: want the NAME of a server")
	}
	name := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("reconnect: unexpected argument %q", fs.Arg(0))
	}
	base, err := url.Parse(*gateway)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return usageErrorf("reconnect: --gateway %q: want the gateway's http or https URL, such as http://127.0.0.1:7777", *gateway)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	endpoint := base.JoinPath("admin", "reconnect", name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), nil)
	if err != nil {
		return fmt.Errorf("reconnect %s: %w", name, err)
	}
	if *tokenEnv != "" {
		token := os.Getenv(*tokenEnv)
		if token == "" {
			return fmt.Errorf("reconnect: --auth-token-env %s: the variable is unset or empty", *tokenEnv)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reconnect %s: is the gateway running at %s? %w", name, base.Redacted(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var answer struct {
		State string `json:"state"`
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &answer) != nil {
		answer.Error = strings.TrimSpace(string(body))
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		fmt.Fprintf(e.stdout, "%s: %s\n", name, answer.State)
		return nil
	case answer.State != "":
		fmt.Fprintf(e.stdout, "%s: %s\n", name, answer.State)
		return fmt.Errorf("reconnect %s: %s", name, answer.Error)
	default:
		return fmt.Errorf("reconnect %s: %s: %s", name, resp.Status, answer.Error)
	}
}
