package mcptest

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestPromptsAndResources(t *testing.T) {
	s := NewServer(Script{
		Prompts:   []PromptSpec{{Name: "greet", Arguments: []string{"who"}}},
		Resources: []ResourceSpec{{URI: "mem://a", Name: "a", Text: "alpha"}},
		Templates: []TemplateSpec{{URITemplate: "mem://t/{id}", Name: "t"}},
	})
	defer s.Close()
	updated := make(chan string, 1)
	ctx := context.Background()
	tr, err := s.ConnectInMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The legacy era, in which resources/subscribe is a plain request: the
	// era Switchboard speaks to in-memory and stdio servers.
	cs, err := newClient(&mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}}).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "PROMPT greet who=Ada" {
		t.Errorf("GetPrompt = %v, %v", pr, err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://a"})
	if err != nil || rr.Contents[0].Text != "alpha" {
		t.Errorf("ReadResource = %v, %v", rr, err)
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 1 {
		t.Errorf("ListResourceTemplates = %v, %v", lt, err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://a"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Subscriptions(); len(got) != 1 || got[0] != "mem://a" {
		t.Errorf("Subscriptions = %v", got)
	}
	if err := s.NotifyResourceUpdated("mem://a"); err != nil {
		t.Fatal(err)
	}
	if uri := <-updated; uri != "mem://a" {
		t.Errorf("updated %q", uri)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://a"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Subscriptions(); len(got) != 0 {
		t.Errorf("Subscriptions after unsubscribe = %v", got)
	}
}

func TestTemplatesError(t *testing.T) {
	s := NewServer(Script{Resources: []ResourceSpec{{URI: "mem://a", Name: "a"}}, TemplatesError: jsonrpc.CodeMethodNotFound})
	defer s.Close()
	cs := connectMemory(t, s, nil)
	_, err := cs.ListResourceTemplates(context.Background(), nil)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("ListResourceTemplates = %v, want -32601", err)
	}
}

func TestFailAndBlockListTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{})
		defer s.Close()
		cs := connectMemory(t, s, nil)
		ctx := context.Background()
		s.FailListTools(1)
		if _, err := cs.ListTools(ctx, nil); err == nil {
			t.Error("the first list succeeded, want it to fail")
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Errorf("the second list = %v", err)
		}
		release := s.BlockListTools()
		done := make(chan error, 1)
		go func() {
			_, err := cs.ListTools(ctx, nil)
			done <- err
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the list was not held")
		default:
		}
		release()
		if err := <-done; err != nil {
			t.Errorf("the held list = %v", err)
		}
	})
}

func TestListTTL(t *testing.T) {
	s := NewServer(Script{ListTTL: 1500 * time.Millisecond})
	defer s.Close()
	cs := connectMemory(t, s, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || res.TTLMs != 1500 {
		t.Errorf("ListTools ttlMs = %v, %v; want 1500", res.TTLMs, err)
	}
}

// TestListFlood: a flooded list carries the server's own items and the
// made-up ones on its first page; with EndlessPages every page names the
// next; SetFlood changes the flood for later requests, and nil ends it.
func TestListFlood(t *testing.T) {
	s := NewServer(Script{Tools: []ToolSpec{{Name: "echo"}}, Flood: &ListFlood{Lists: []string{"tools", "prompts"}, Items: 2, ItemBytes: 5, EndlessPages: true}})
	defer s.Close()
	cs := connectMemory(t, s, nil)
	ctx := t.Context()
	var names []string
	cursor := ""
	for range 3 {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Name != "echo" && tool.Description != "xxxxx" {
				t.Errorf("tool %s: description %q, want 5 bytes", tool.Name, tool.Description)
			}
		}
		if res.NextCursor == "" {
			t.Fatalf("page after %q has no next cursor", cursor)
		}
		cursor = res.NextCursor
	}
	want := []string{"echo", "flood_0_0", "flood_0_1", "flood_1_0", "flood_1_1", "flood_2_0", "flood_2_1"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools of 3 pages (-want +got):\n%s", diff)
	}
	if pr, err := cs.ListPrompts(ctx, nil); err != nil || len(pr.Prompts) != 2 || pr.NextCursor != "flood-1" {
		t.Errorf("prompts = %v, %v; want 2 made up, and a next page", pr, err)
	}
	s.SetFlood(nil)
	if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) != 1 || res.NextCursor != "" {
		t.Errorf("tools after the flood = %v, %v; want echo alone", res, err)
	}
}
