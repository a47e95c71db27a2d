package demo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil)
}

// callText calls the tool name and returns its text and whether it is an
// error result.
func callText(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, bool, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	return mcptest.Text(res), res.IsError, nil
}

// connectDemo connects a client to New(name) in memory.
func connectDemo(t *testing.T, name string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(name).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClient().Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// structured calls a demo tool and decodes its structured content into out.
func structured(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: error result %q", name, mcptest.Text(res))
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, data, err)
	}
	return res
}

func TestTools(t *testing.T) {
	cs := connectDemo(t, "")
	ctx := context.Background()
	if got := cs.InitializeResult().ServerInfo.Name; got != "demo" {
		t.Errorf("name %q, want demo", got)
	}

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ ReadOnly, Idempotent bool }
	got := map[string]hints{}
	for _, tool := range res.Tools {
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		got[tool.Name] = hints{tool.Annotations.ReadOnlyHint, tool.Annotations.IdempotentHint}
	}
	want := map[string]hints{
		"now":         {ReadOnly: true},
		"echo":        {ReadOnly: true, Idempotent: true},
		"note_add":    {},
		"note_list":   {ReadOnly: true, Idempotent: true},
		"note_get":    {ReadOnly: true, Idempotent: true},
		"note_delete": {Idempotent: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	var echo echoOutput
	if res := structured(t, cs, "echo", map[string]any{"text": "hello"}, &echo); echo.Text != "hello" || mcptest.Text(res) != "hello" {
		t.Errorf("echo = %+v, text %q", echo, mcptest.Text(res))
	}

	var id1, id2 noteIDOutput
	structured(t, cs, "note_add", map[string]any{"title": "shopping", "body": "milk"}, &id1)
	structured(t, cs, "note_add", map[string]any{"title": "todo", "body": "write tests"}, &id2)
	var list noteListOutput
	structured(t, cs, "note_list", nil, &list)
	wantList := noteListOutput{Notes: []noteSummary{{id1.ID, "shopping"}, {id2.ID, "todo"}}}
	if diff := cmp.Diff(wantList, list); diff != "" {
		t.Errorf("note_list (-want +got):\n%s", diff)
	}
	var n note
	structured(t, cs, "note_get", map[string]any{"id": id2.ID}, &n)
	if diff := cmp.Diff(note{id2.ID, "todo", "write tests"}, n); diff != "" {
		t.Errorf("note_get (-want +got):\n%s", diff)
	}
	var del noteDeleteOutput
	structured(t, cs, "note_delete", map[string]any{"id": id1.ID}, &del)
	if !del.Deleted {
		t.Error("note_delete: deleted false")
	}
	structured(t, cs, "note_delete", map[string]any{"id": id1.ID}, &del)
	if del.Deleted {
		t.Error("second note_delete: deleted true")
	}
	list = noteListOutput{}
	structured(t, cs, "note_list", nil, &list)
	if len(list.Notes) != 1 || list.Notes[0].ID != id2.ID {
		t.Errorf("note_list after delete: %+v", list)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"note_get", map[string]any{"id": id1.ID}, "no note with id"},
		{"note_add", map[string]any{"title": " ", "body": "x"}, "title must not be empty"},
		{"now", map[string]any{"timezone": "Mars/Olympus_Mons"}, "unknown time zone"},
		{"echo", map[string]any{}, "text"},
	} {
		text, isError, err := callText(ctx, cs, tc.tool, tc.args)
		if err != nil || !isError || !strings.Contains(text, tc.want) {
			t.Errorf("%s(%v) = %q, isError %v, %v; want an error result containing %q", tc.tool, tc.args, text, isError, err, tc.want)
		}
	}
}

func TestNow(t *testing.T) {
	cs := connectDemo(t, "clock")
	if got := cs.InitializeResult().ServerInfo.Name; got != "clock" {
		t.Errorf("name %q, want clock", got)
	}
	var out nowOutput
	before := time.Now().Unix()
	structured(t, cs, "now", nil, &out)
	if _, err := time.Parse(time.RFC3339, out.Time); err != nil || out.Timezone != "UTC" || out.Unix < before {
		t.Errorf("now = %+v (%v)", out, err)
	}
	structured(t, cs, "now", map[string]any{"timezone": "Asia/Tokyo", "layout": "DateTime"}, &out)
	tm, err := time.ParseInLocation(time.DateTime, out.Time, time.FixedZone("JST", 9*3600))
	if err != nil || out.Timezone != "Asia/Tokyo" || tm.Unix() != out.Unix {
		t.Errorf("now in Tokyo = %+v (%v)", out, err)
	}
	structured(t, cs, "now", map[string]any{"layout": "2006"}, &out)
	if len(out.Time) != 4 {
		t.Errorf("now with a Go layout = %q", out.Time)
	}
}

func TestServe(t *testing.T) {
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, "piped", serverIn, serverOut) }()

	cs, err := newClient().Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := callText(ctx, cs, "echo", map[string]any{"text": "hi"}); err != nil || got != "hi" {
		t.Errorf("echo = %q, %v", got, err)
	}
	cs.Close()
	if err := <-errc; err != nil {
		t.Errorf("Serve after the input closed: %v", err)
	}

	// Cancelling the context ends it cleanly too.
	clientIn, serverOut = io.Pipe()
	serverIn, clientOut = io.Pipe()
	go func() { errc <- Serve(ctx, "piped", serverIn, serverOut) }()
	cs, err = newClient().Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	// The session ends with the server.
	_ = cs.Wait()
	if _, _, err := callText(context.Background(), cs, "echo", nil); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("call after the server ended = %v, want ErrConnectionClosed", err)
	}
}
