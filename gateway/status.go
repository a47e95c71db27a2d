package gateway

import (
	"context"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/identity"
)

// statusPage is /status: one small page, with no external assets, that
// refreshes itself every 5 s. A server in trouble stands out by its color.
var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="5">
<title>switchboard: {{.Summary}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}th,td{padding:.35em .8em;text-align:left;border-bottom:1px solid #ddd;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.state{font-weight:600;padding:.1em .5em;border-radius:.3em}
.ok{background:#d7f5dd;color:#135c22}.wait{background:#fff1c2;color:#6b4e00}.bad{background:#ffd6d6;color:#8a1010}.off{background:#eee;color:#555}
.err,code{font-family:ui-monospace,monospace;font-size:12px;max-width:48em;word-break:break-word}
</style></head><body>
<h1>switchboard {{.Version}}</h1>
<p id="summary">{{.Summary}} · up {{.Uptime}}</p>
{{with .ToolSearch}}{{if ne .Setting "off"}}<p id="tool-search">tool search {{if .On}}<span class="state ok">on</span>: {{.Tools}} tools behind search_tools{{else}}<span class="state off">off</span>: {{.Tools}} tools listed{{end}} (setting {{.Setting}})</p>{{end}}{{end}}
{{with .Reload}}<p id="reload">config reloaded at {{.At.Format "15:04:05 MST"}}{{if .Error}}: <span class="state bad">{{.Error}}</span>{{else}}: <span class="state ok">ok</span>{{end}}</p>{{end}}
<table id="servers"><thead><tr><th>server</th><th>state</th><th>transport</th><th>tools</th><th>reconnects</th><th>pid</th><th>calls</th><th>p50</th><th>p99</th><th>last error</th></tr></thead><tbody>
{{range .Servers}}<tr data-server="{{.Name}}" data-state="{{.State}}"><td>{{.Name}}</td><td><span class="state {{.Class}}">{{.State}}</span></td><td>{{.Transport}}{{with .SkippedLines}}<br><small class="skipped" title="lines the server wrote to stdout that are not JSON-RPC">skipped stdout lines: {{.}}</small>{{end}}</td><td class="n">{{.Tools}}{{with .Held}}<br><small class="held">{{.}} held</small>{{end}}</td><td class="n">{{.Reconnects}}</td><td class="n">{{if .PID}}{{.PID}}{{end}}</td><td class="n">{{.Calls}}</td><td class="n">{{.P50}}</td><td class="n">{{.P99}}</td><td class="err">{{.Error}}</td></tr>
{{end}}</tbody></table>
{{with .Policies}}<h2>Policies</h2>
<table id="policies"><thead><tr><th>effect</th><th>servers</th><th>tools</th><th>prompts</th><th>resources</th><th>when</th></tr></thead><tbody>
{{range .Rules}}<tr><td>{{.Effect}}</td><td>{{range $i, $g := .Servers}}{{if $i}}, {{end}}<code>{{$g}}</code>{{end}}</td><td>{{range $i, $g := .Tools}}{{if $i}}, {{end}}<code>{{$g}}</code>{{end}}</td><td>{{range $i, $g := .Prompts}}{{if $i}}, {{end}}<code>{{$g}}</code>{{end}}</td><td>{{range $i, $g := .Resources}}{{if $i}}, {{end}}<code>{{$g}}</code>{{end}}</td><td><code>{{.When}}</code></td></tr>
{{else}}<tr><td colspan="6">no rules: every identity may use everything</td></tr>
{{end}}</tbody></table>
{{with .Identities}}<h2>Identities connected</h2>
<table id="identities"><thead><tr><th>subject</th><th>client</th><th>groups</th><th>scopes</th><th>sessions</th><th>servers it may use</th><th>tools</th></tr></thead><tbody>
{{range .}}<tr data-subject="{{.Subject}}"><td>{{.Subject}}</td><td>{{.Client}}</td><td>{{range $i, $g := .Groups}}{{if $i}}, {{end}}{{$g}}{{end}}</td><td>{{range $i, $g := .Scopes}}{{if $i}}, {{end}}{{$g}}{{end}}</td><td class="n">{{.Sessions}}</td><td>{{range $i, $g := .Servers}}{{if $i}}, {{end}}{{$g}}{{end}}</td><td class="n">{{.Tools}}</td></tr>
{{end}}</tbody></table>{{end}}{{with .MoreIdentities}}<p>and {{.}} more identities</p>{{end}}{{end}}
{{if or .Pins .Pinned}}<h2>Tool pinning</h2>
{{with .Pins}}<p id="pins">pins file <code>{{.File}}</code>{{if .Error}}: <span class="state bad">{{.Error}}</span>{{end}}</p>{{end}}
{{with .Pinned}}<table id="pin-changes"><thead><tr><th>server</th><th>mode</th><th>tool</th><th>state</th><th>fields</th><th>suspicious</th><th>approve with</th></tr></thead><tbody>
{{range .}}{{$s := .}}{{range .PinChanges}}<tr data-server="{{$s.Name}}" data-tool="{{.Name}}"><td>{{$s.Name}}</td><td>{{$s.Pinning}}</td><td>{{.Name}}</td><td><span class="state {{if .Held}}bad{{else}}wait{{end}}">{{.State}}{{if .Held}}, held{{end}}</span></td><td>{{range $i, $f := .Fields}}{{if $i}}, {{end}}{{$f}}{{end}}</td><td>{{range $i, $f := .Suspicious}}{{if $i}}; {{end}}{{$f}}{{end}}</td><td>{{with .Approve}}<code>{{.}}</code>{{else}}<span class="err">{{.Error}}</span>{{end}}</td></tr>
{{end}}{{end}}</tbody></table>{{end}}{{end}}
{{with .Collided}}<h2>Resource collisions</h2>
<p>A resource URI that several servers offer is served by the one configured first. These servers offer URIs that another one serves:</p>
<ul id="collisions">{{range .}}<li data-server="{{.Name}}">{{.Name}}: {{range $i, $uri := .Collisions}}{{if $i}}, {{end}}<code>{{$uri}}</code>{{end}}</li>
{{end}}</ul>{{end}}
</body></html>
`))

// A StatusRow is one server's line on /status, and in its JSON answer.
type StatusRow struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	Class      string `json:"-"` // the page's color for State; not in the JSON
	Transport  string `json:"transport"`
	Tools      int    `json:"tools"`
	Reconnects uint64 `json:"reconnects"`
	PID        int    `json:"pid,omitempty"` // a connected stdio server's process
	// SkippedLines counts the lines a stdio server wrote to stdout that were
	// not JSON-RPC, skipped (see switchboard.ServerStatus.SkippedLines).
	SkippedLines uint64  `json:"skipped_lines,omitempty"`
	Calls        uint64  `json:"calls"`
	P50          string  `json:"p50"` // for people: "-" with no call
	P99          string  `json:"p99"`
	P50Seconds   float64 `json:"p50_seconds,omitempty"`
	P99Seconds   float64 `json:"p99_seconds,omitempty"`
	Error        string  `json:"error,omitempty"`
	// Action is the command that brings the server back, when one does:
	// "switchboard login NAME --config FILE" for a server in needs-auth.
	Action string `json:"action,omitempty"`
	// Collisions are the resource URIs that the server offers but another
	// one, configured first, serves.
	Collisions []string `json:"collisions,omitempty"`
	// Trespasses are the tools and prompts that the server lists in
	// another server's namespace, which it may not expose.
	Trespasses []string `json:"trespasses,omitempty"`
	// Pinning is the server's tool pinning mode: off, warn or enforce.
	Pinning string `json:"pinning,omitempty"`
	// Held counts the server's tools that pinning holds (enforce).
	Held int `json:"held,omitempty"`
	// PinChanges are the server's tools that are not as pinned: changed,
	// new, removed, or that cannot be pinned or checked.
	PinChanges []PinRow `json:"pin_changes,omitempty"`
}

// A PinRow is one tool that is not as pinned (see
// switchboard.ToolPin): what changed, not the definitions themselves.
type PinRow struct {
	Name  string `json:"name"` // the public name
	Tool  string `json:"tool"` // the name on its server
	State string `json:"state"`
	// Held reports a tool that is not exposed until a person approves it.
	Held bool `json:"held"`
	// Fields are the fields of a changed tool that differ from its pin.
	Fields []string `json:"fields,omitempty"`
	// Suspicious says why a changed or new description looks like an
	// instruction to the model.
	Suspicious []string `json:"suspicious,omitempty"`
	// Approve is the command that approves the tool as listed now, if one
	// can.
	Approve string `json:"approve,omitempty"`
	// Error says why the tool cannot be pinned or checked.
	Error string `json:"error,omitempty"`
}

// A PinsRow is the pins file of the gateway, and why it cannot be read if
// it cannot.
type PinsRow struct {
	File  string `json:"file"`
	Error string `json:"error,omitempty"`
}

// A StatusReport is what /status answers to a client that accepts JSON
// (switchboard status --gateway reads it): the page's contents.
type StatusReport struct {
	Version       string      `json:"version"`
	Summary       string      `json:"summary"`
	UptimeSeconds int64       `json:"uptime_seconds"`
	Uptime        string      `json:"-"` // for the page
	Servers       []StatusRow `json:"servers"`
	Collided      []StatusRow `json:"-"` // for the page: the servers with collisions
	Reload        *ReloadRow  `json:"last_reload,omitempty"`
	// ToolSearch is the tool search setting and whether it is on now.
	ToolSearch ToolSearchRow `json:"tool_search"`
	// Policies, if the gateway has them, are the rules and who uses them.
	Policies *PolicyReport `json:"policies,omitempty"`
	// Pins is the pins file, while some server's tool pinning is on.
	Pins *PinsRow `json:"pins,omitempty"`
	// Pinned are the servers with PinChanges, for the page.
	Pinned []StatusRow `json:"-"`
}

// A ToolSearchRow says whether tool search is on, by its setting ("on",
// or "auto:N", on while more than N tools are exposed), and how many tools
// the servers expose, which are behind search_tools while it is on.
type ToolSearchRow struct {
	Setting string `json:"setting"`
	On      bool   `json:"on"`
	Tools   int    `json:"tools"`
}

// A ReloadRow is the last config reload, on the page and in the JSON
// answer.
type ReloadRow struct {
	At    time.Time `json:"at"`
	Error string    `json:"error,omitempty"`
}

// stateClass colors a state: connected is well, on the way is a wait, down
// is bad, off is neither.
func stateClass(s switchboard.State) string {
	switch s {
	case switchboard.StateConnected:
		return "ok"
	case switchboard.StateConnecting, switchboard.StateReconnecting:
		return "wait"
	case switchboard.StateFailed, switchboard.StateCrashLoop, switchboard.StateNeedsAuth:
		return "bad"
	}
	return "off"
}

// statusReport reads last-known state: no URL, no header, and errors as
// ServerStatus.ErrorText shows them.
func (e *endpoints) statusReport() StatusReport {
	statuses := e.m.Status()
	uptime := time.Since(e.started).Round(time.Second)
	report := StatusReport{Version: e.opts.Implementation.Version, Uptime: uptime.String(), UptimeSeconds: int64(uptime / time.Second),
		Servers: make([]StatusRow, 0, len(statuses))}
	down := 0
	for _, s := range statuses {
		row := StatusRow{Name: s.Name, State: s.State.String(), Class: stateClass(s.State), Transport: string(s.Transport),
			Error: s.ErrorText(), Tools: s.Tools, Reconnects: s.Reconnects, PID: s.PID, SkippedLines: s.SkippedLines, P50: "-", P99: "-", Collisions: s.Collisions, Trespasses: s.Trespasses}
		if s.State == switchboard.StateNeedsAuth {
			row.Action = s.LoginCommand()
		}
		if s.Pinning != "" && s.Pinning != config.PinningOff {
			row.Pinning = string(s.Pinning)
		}
		row.PinChanges = PinRows(s)
		row.Held = len(s.Held())
		if e.opts.Latency != nil {
			if p50, p99, n := e.opts.Latency(s.Name); n > 0 {
				row.Calls, row.P50, row.P99 = n, roundLatency(p50), roundLatency(p99)
				row.P50Seconds, row.P99Seconds = p50.Seconds(), p99.Seconds()
			}
		}
		if row.Class == "bad" || row.Class == "wait" {
			down++
		}
		report.Servers = append(report.Servers, row)
		if len(row.Collisions) > 0 {
			report.Collided = append(report.Collided, row)
		}
		if len(row.PinChanges) > 0 {
			report.Pinned = append(report.Pinned, row)
		}
	}
	if file, err := e.m.PinsFile(); file != "" || err != nil {
		report.Pins = &PinsRow{File: file}
		if err != nil {
			report.Pins.Error = switchboard.ServerStatus{Err: err}.ErrorText()
		}
	}
	if r := e.reload.Load(); r != nil {
		report.Reload = &ReloadRow{At: r.at.UTC().Truncate(time.Second), Error: r.err}
	}
	x := e.registry.exposure()
	report.ToolSearch = ToolSearchRow{Setting: x.setting.String(), On: x.searchOn, Tools: x.count}
	report.Policies = e.policyReport()
	report.Summary = "all servers up"
	if !statuses.Ready() {
		report.Summary = "not ready"
	} else if down > 0 {
		report.Summary = "ready, some servers down"
	}
	return report
}

// status serves /status: the page, or its contents as JSON to a client
// whose Accept header prefers application/json.
func (e *endpoints) status(w http.ResponseWriter, r *http.Request) {
	report := e.statusReport()
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, report)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := statusPage.Execute(w, report); err != nil {
		e.opts.Logger.Debug("status page", "error", err)
	}
}

// wantsJSON reports whether r's Accept header names application/json
// before text/html, or without it.
func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	j, h := strings.Index(accept, "application/json"), strings.Index(accept, "text/html")
	return j >= 0 && (h < 0 || j < h)
}

// roundLatency shows a latency to a useful precision.
func roundLatency(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// maxStatusIdentities bounds the identities /status lists, the first by
// subject: past it, the rest are counted.
const maxStatusIdentities = 100

// A PolicyReport is what /status shows of the gateway's policies: the
// rules in force and, with OAuth, the identities of the sessions open now,
// with what each may use. Only the gateway's admins read it.
type PolicyReport struct {
	Rules      []PolicyRuleRow `json:"rules"`
	Identities []IdentityRow   `json:"identities,omitempty"`
	// MoreIdentities counts the identities past maxStatusIdentities.
	MoreIdentities int `json:"more_identities,omitempty"`
}

// A PolicyRuleRow is one rule, as the config says it.
type PolicyRuleRow struct {
	Effect    string   `json:"effect"` // "allow" or "deny"
	Servers   []string `json:"servers,omitempty"`
	Tools     []string `json:"tools,omitempty"`
	Prompts   []string `json:"prompts,omitempty"`
	Resources []string `json:"resources,omitempty"`
	When      string   `json:"when,omitempty"`
}

// An IdentityRow is one identity with open sessions, and what it may use.
type IdentityRow struct {
	Subject  string   `json:"subject"`
	Client   string   `json:"client,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	Sessions int      `json:"sessions"`
	// Servers are those of which it may use a tool, and Tools how many.
	Servers []string `json:"servers"`
	Tools   int      `json:"tools"`
}

// policyReport returns what /status shows of the policies, or nil when
// there is nothing to show (no rules, and no identity connected).
func (e *endpoints) policyReport() *PolicyReport {
	if e.opts.Policies == nil {
		return nil
	}
	rules := e.opts.Policies.Rules()
	report := &PolicyReport{Rules: make([]PolicyRuleRow, 0, len(rules))}
	for _, r := range rules {
		row := PolicyRuleRow{Effect: "allow", Servers: r.Servers, Tools: r.Tools, Prompts: r.Prompts, Resources: r.Resources, When: r.When}
		if r.Deny {
			row.Effect = "deny"
		}
		report.Rules = append(report.Rules, row)
	}
	type seen struct {
		id       *identity.Identity
		sessions int
	}
	bySubject := make(map[string]*seen)
	for _, id := range e.sessions.identities() {
		key := id.Subject + "\x00" + id.Client
		if s := bySubject[key]; s != nil {
			s.sessions++
			continue
		}
		bySubject[key] = &seen{id, 1}
	}
	keys := slices.Sorted(maps.Keys(bySubject))
	if n := len(keys) - maxStatusIdentities; n > 0 {
		report.MoreIdentities, keys = n, keys[:maxStatusIdentities]
	}
	for _, k := range keys {
		s := bySubject[k]
		row := IdentityRow{Subject: s.id.Subject, Client: s.id.Client, Groups: s.id.Groups, Scopes: s.id.Scopes, Sessions: s.sessions, Servers: []string{}}
		tools := e.m.Tools(context.Background(), &switchboard.Query{Extra: map[string]any{switchboard.IdentityKey: s.id}})
		row.Tools = len(tools)
		for _, t := range tools {
			if !slices.Contains(row.Servers, t.Server) {
				row.Servers = append(row.Servers, t.Server)
			}
		}
		slices.Sort(row.Servers)
		report.Identities = append(report.Identities, row)
	}
	if len(report.Rules) == 0 && len(report.Identities) == 0 {
		return nil // nothing to show: no rules, no one connected with a token
	}
	return report
}

// PinRows returns the tools of s that are not as pinned, as /status shows
// them.
func PinRows(s switchboard.ServerStatus) []PinRow {
	var out []PinRow
	for _, tp := range s.PinChanges {
		row := PinRow{Name: tp.Name, Tool: tp.Tool, State: string(tp.State), Held: tp.Held, Fields: tp.Fields, Suspicious: tp.Suspicious,
			Approve: tp.Approve}
		if tp.Err != nil {
			row.Error = switchboard.ServerStatus{Err: tp.Err}.ErrorText()
		}
		out = append(out, row)
	}
	return out
}
