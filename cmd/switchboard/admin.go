package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// reconnect asks a running gateway to reconnect one server now, which also
// ends a crash loop, and prints the server's state after the attempt. It
// exits 1 unless the server is connected.
func (e *env) reconnect(ctx context.Context, args []string) error {
	fs := e.flags("reconnect", "NAME [--gateway URL] [--auth-token-env NAME]")
	gateway := fs.String("gateway", "http://127.0.0.1:7777", "the running gateway's `URL`")
	tokenEnv := fs.String("auth-token-env", "", "send 'Authorization: Bearer TOKEN', with TOKEN read from the environment variable `NAME`")
	name, err := nameArg(fs, args, "reconnect")
	if err != nil {
		return err
	}
	resp, body, err := askGateway(ctx, "reconnect", *gateway, *tokenEnv, http.MethodPost, "admin", "reconnect", name)
	if err != nil {
		return err
	}
	var answer struct {
		State string `json:"state"`
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &answer) != nil {
		answer.Error = strings.TrimSpace(string(body))
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		fmt.Fprintf(e.stdout, "%s: %s\n", name, printableLine(answer.State))
		return nil
	case answer.State != "":
		fmt.Fprintf(e.stdout, "%s: %s\n", name, printableLine(answer.State))
		return fmt.Errorf("reconnect %s: %s", name, answer.Error)
	case strings.HasPrefix(answer.Error, "reconnect "): // the gateway named the request
		return fmt.Errorf("%s (%s)", answer.Error, resp.Status)
	default:
		return fmt.Errorf("reconnect %s: %s (%s)", name, answer.Error, resp.Status)
	}
}

// askGateway sends a request with no body to the running gateway at
// gateway (its base URL), to the path made of elems, with the bearer token
// from the environment variable tokenEnv if it is set, and answers the
// response with its body (at most 1 MiB). verb begins its errors.
func askGateway(ctx context.Context, verb, gateway, tokenEnv, method string, elems ...string) (*http.Response, []byte, error) {
	base, err := url.Parse(gateway)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, nil, usageErrorf("%s: --gateway %q: want the gateway's http or https URL, such as http://127.0.0.1:7777", verb, gateway)
	}
	// The URL that serve logs is its MCP endpoint's: take its base.
	base.Path = strings.TrimSuffix(strings.TrimSuffix(base.Path, "/"), "/mcp")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base.JoinPath(elems...).String(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", verb, err)
	}
	req.Header.Set("Accept", "application/json")
	if tokenEnv != "" {
		token := os.Getenv(tokenEnv)
		if token == "" {
			return nil, nil, fmt.Errorf("%s: --auth-token-env %s: the variable is unset or empty", verb, tokenEnv)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: is the gateway running at %s? %w", verb, base.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading the gateway's answer: %w", verb, err)
	}
	return resp, body, nil
}

// gatewayStatus prints the status of the running gateway at gatewayURL, as
// its /status page shows it: the servers' states, reconnects and calls.
func (e *env) gatewayStatus(ctx context.Context, gatewayURL, tokenEnv string, asJSON bool) error {
	resp, body, err := askGateway(ctx, "status", gatewayURL, tokenEnv, http.MethodGet, "status")
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var report gateway.StatusReport
	if err := json.Unmarshal(body, &report); err != nil {
		return fmt.Errorf("status: the answer of %s is not a gateway's status (%w)", gatewayURL, err)
	}
	if asJSON {
		var v any // re-encoded, without the HTML escapes of an HTTP answer
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("status: the answer of %s is not a gateway's status (%w)", gatewayURL, err)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(e.stdout, "switchboard %s: %s, up %s\n", printableLine(report.Version), printableLine(report.Summary), time.Duration(report.UptimeSeconds)*time.Second)
	if ts := report.ToolSearch; ts.Setting != "" && ts.Setting != "off" {
		state := "off: %s listed"
		if ts.On {
			state = "on: %s behind search_tools"
		}
		fmt.Fprintf(e.stdout, "tool search "+state+" (setting %s)\n", count(ts.Tools, "tool"), printableLine(ts.Setting))
	}
	fmt.Fprintln(e.stdout)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tTOOLS\tRECONNECTS\tPID\tCALLS\tP50\tP99\tERROR")
	for _, s := range report.Servers {
		cells := []string{s.Name, string(s.State), s.Transport, s.P50, s.P99, tableError(s.Error, "--json")}
		for i, c := range cells {
			cells[i] = printableLine(c)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", cells[0], cells[1], cells[2], s.Tools, s.Reconnects, pidText(s.PID), s.Calls,
			cells[3], cells[4], cells[5])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	notes := make([]statusNote, len(report.Servers))
	for i, s := range report.Servers {
		notes[i] = statusNote{name: s.Name, collisions: s.Collisions, trespasses: s.Trespasses, skipped: s.SkippedLines}
		for _, p := range s.PinChanges {
			notes[i].addPin(p.Name, p.Held, p.State != string(switchboard.PinRemoved))
		}
	}
	if p := report.Pins; p != nil && p.Error != "" {
		notes = append(notes, statusNote{pinsFile: p.File, pinsError: p.Error})
	}
	if err := printNotes(e.stdout, notes); err != nil {
		return err
	}
	return printPolicies(e.stdout, report.Policies)
}

// printPolicies prints what /status shows an admin of the gateway's
// policies: the rules, and the identities connected with what each may
// use. Nothing without policies.
func printPolicies(w io.Writer, p *gateway.PolicyReport) error {
	if p == nil {
		return nil
	}
	list := func(items []string) string {
		if len(items) == 0 {
			return "*"
		}
		return printableLine(strings.Join(items, ","))
	}
	fmt.Fprintln(w)
	if len(p.Rules) == 0 {
		fmt.Fprintln(w, "policies: none (every identity may use everything)")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RULE\tEFFECT\tSERVERS\tTOOLS\tPROMPTS\tRESOURCES\tWHEN")
		for i, r := range p.Rules {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i, r.Effect, list(r.Servers), list(r.Tools), list(r.Prompts), list(r.Resources), printableLine(r.When))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(p.Identities) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IDENTITY\tCLIENT\tGROUPS\tSESSIONS\tSERVERS\tTOOLS")
	for _, id := range p.Identities {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\n", printableLine(id.Subject), printableLine(id.Client), list(id.Groups), id.Sessions, list(id.Servers), id.Tools)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.MoreIdentities > 0 {
		fmt.Fprintf(w, "and %d more identities (--json lists them as /status does)\n", p.MoreIdentities)
	}
	return nil
}
