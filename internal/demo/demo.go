// Package demo is the built-in demo MCP server behind `switchboard
// demo-server`: a clock, an echo and an in-memory notebook, so that every
// verb of the command works on a fresh machine.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the demo must know every IANA zone, even on hosts without zoneinfo

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// New returns the demo server behind `switchboard demo-server`: a small
// but genuinely useful MCP server with a clock, an echo and an in-memory
// notebook. Its implementation name is name ("" means "demo").
//
// Tools:
//
//	now          current time in an IANA zone (default UTC), in a chosen layout
//	echo         returns the given text
//	note_add     stores a note (title, body) and returns its id
//	note_list    lists the notes' ids and titles
//	note_get     returns one note
//	note_delete  deletes one note
//
// Notes live in memory for the life of the returned server and are safe for
// concurrent use by many sessions.
func New(name string) *mcp.Server {
	if name == "" {
		name = "demo"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Title: "Switchboard demo server", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: "A demo server: tell the time with now, repeat text with echo, and keep short notes with note_add, note_list, note_get and note_delete. Notes are lost when the server stops.",
	})
	nb := &notebook{}
	closedWorld := false
	destructive := false

	mcp.AddTool(s, &mcp.Tool{
		Name:        "now",
		Description: "Returns the current time. Optionally give an IANA time zone (such as Europe/Paris; default UTC) and a layout: a Go time layout such as 2006-01-02 15:04, or the name of a standard one (RFC3339, RFC3339Nano, RFC1123, RFC1123Z, RFC822, RFC850, Kitchen, DateTime, DateOnly, TimeOnly; default RFC3339).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closedWorld},
	}, demoNow)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Returns the given text unchanged.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closedWorld},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in echoInput) (*mcp.CallToolResult, echoOutput, error) {
		return textResult(in.Text), echoOutput(in), nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "note_add",
		Description: "Stores a new note and returns its id. Each call adds a note, even with the same title.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive, OpenWorldHint: &closedWorld},
	}, nb.add)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "note_list",
		Description: "Lists the stored notes: their ids and titles, oldest first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closedWorld},
	}, nb.list)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "note_get",
		Description: "Returns the note with the given id: its title and body.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closedWorld},
	}, nb.get)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "note_delete",
		Description: "Deletes the note with the given id. Deleting a note that does not exist is not an error: deleted is then false.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: &closedWorld},
	}, nb.delete)

	return s
}

// Serve serves New(name) on in and out (stdio) until in closes or
// ctx is done; both end it cleanly with a nil error.
func Serve(ctx context.Context, name string, in io.Reader, out io.Writer) error {
	t := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: writeCloser{out}}
	err := New(name).Run(ctx, t)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

type nowInput struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone name, such as Europe/Paris or America/New_York; default UTC"`
	Layout   string `json:"layout,omitempty" jsonschema:"Go time layout (such as 2006-01-02 15:04) or the name of a standard layout (such as RFC3339 or Kitchen); default RFC3339"`
}

type nowOutput struct {
	Time     string `json:"time" jsonschema:"the current time, formatted"`
	Timezone string `json:"timezone" jsonschema:"the time zone used"`
	Unix     int64  `json:"unix" jsonschema:"seconds since 1970-01-01T00:00:00Z"`
}

// namedLayouts are the standard layouts that now accepts by name.
var namedLayouts = map[string]string{
	"RFC3339":     time.RFC3339,
	"RFC3339Nano": time.RFC3339Nano,
	"RFC1123":     time.RFC1123,
	"RFC1123Z":    time.RFC1123Z,
	"RFC822":      time.RFC822,
	"RFC822Z":     time.RFC822Z,
	"RFC850":      time.RFC850,
	"ANSIC":       time.ANSIC,
	"UnixDate":    time.UnixDate,
	"Kitchen":     time.Kitchen,
	"Stamp":       time.Stamp,
	"DateTime":    time.DateTime,
	"DateOnly":    time.DateOnly,
	"TimeOnly":    time.TimeOnly,
}

func demoNow(_ context.Context, _ *mcp.CallToolRequest, in nowInput) (*mcp.CallToolResult, nowOutput, error) {
	zone := in.Timezone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || strings.EqualFold(zone, "local") {
		// An error here is returned as an isError result, not a protocol
		// error, so that a model can correct the zone and try again.
		return nil, nowOutput{}, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Paris or America/New_York", zone)
	}
	layout := time.RFC3339
	if in.Layout != "" {
		layout = in.Layout
		if named, ok := namedLayouts[in.Layout]; ok {
			layout = named
		}
	}
	t := time.Now().In(loc)
	out := nowOutput{Time: t.Format(layout), Timezone: loc.String(), Unix: t.Unix()}
	return textResult(out.Time), out, nil
}

type echoInput struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type echoOutput struct {
	Text string `json:"text" jsonschema:"the text given"`
}

type noteInput struct {
	Title string `json:"title" jsonschema:"a short title"`
	Body  string `json:"body" jsonschema:"the text of the note"`
}

type noteIDInput struct {
	ID string `json:"id" jsonschema:"the note's id, as note_add or note_list gave it"`
}

type noteIDOutput struct {
	ID string `json:"id" jsonschema:"the new note's id"`
}

type noteSummary struct {
	ID    string `json:"id" jsonschema:"the note's id"`
	Title string `json:"title" jsonschema:"the note's title"`
}

type noteListOutput struct {
	Notes []noteSummary `json:"notes" jsonschema:"the notes, oldest first"`
}

type note struct {
	ID    string `json:"id" jsonschema:"the note's id"`
	Title string `json:"title" jsonschema:"the note's title"`
	Body  string `json:"body" jsonschema:"the text of the note"`
}

type noteDeleteOutput struct {
	Deleted bool `json:"deleted" jsonschema:"whether a note was deleted"`
}

// notebook holds the demo server's notes. It is safe for concurrent use.
type notebook struct {
	mu    sync.Mutex
	next  int    // guarded by mu; the last id number given
	notes []note // guarded by mu; oldest first
}

func (nb *notebook) add(_ context.Context, _ *mcp.CallToolRequest, in noteInput) (*mcp.CallToolResult, noteIDOutput, error) {
	if strings.TrimSpace(in.Title) == "" {
		return nil, noteIDOutput{}, fmt.Errorf("title must not be empty")
	}
	nb.mu.Lock()
	nb.next++
	id := "n" + strconv.Itoa(nb.next)
	nb.notes = append(nb.notes, note{ID: id, Title: in.Title, Body: in.Body})
	nb.mu.Unlock()
	return textResult(id), noteIDOutput{ID: id}, nil
}

func (nb *notebook) list(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, noteListOutput, error) {
	nb.mu.Lock()
	out := noteListOutput{Notes: make([]noteSummary, 0, len(nb.notes))}
	for _, n := range nb.notes {
		out.Notes = append(out.Notes, noteSummary{ID: n.ID, Title: n.Title})
	}
	nb.mu.Unlock()
	var b strings.Builder
	for _, n := range out.Notes {
		fmt.Fprintf(&b, "%s\t%s\n", n.ID, n.Title)
	}
	if len(out.Notes) == 0 {
		b.WriteString("no notes\n")
	}
	return textResult(b.String()), out, nil
}

func (nb *notebook) get(_ context.Context, _ *mcp.CallToolRequest, in noteIDInput) (*mcp.CallToolResult, note, error) {
	nb.mu.Lock()
	i := slices.IndexFunc(nb.notes, func(n note) bool { return n.ID == in.ID })
	var n note
	if i >= 0 {
		n = nb.notes[i]
	}
	nb.mu.Unlock()
	if i < 0 {
		return nil, note{}, fmt.Errorf("no note with id %q", in.ID)
	}
	return textResult(n.Title + "\n\n" + n.Body), n, nil
}

func (nb *notebook) delete(_ context.Context, _ *mcp.CallToolRequest, in noteIDInput) (*mcp.CallToolResult, noteDeleteOutput, error) {
	nb.mu.Lock()
	before := len(nb.notes)
	nb.notes = slices.DeleteFunc(nb.notes, func(n note) bool { return n.ID == in.ID })
	deleted := len(nb.notes) < before
	nb.mu.Unlock()
	text := "deleted " + in.ID
	if !deleted {
		text = "no note with id " + in.ID
	}
	return textResult(text), noteDeleteOutput{Deleted: deleted}, nil
}

// writeCloser closes the writer it wraps if it can.
type writeCloser struct{ io.Writer }

func (w writeCloser) Close() error {
	if c, ok := w.Writer.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
