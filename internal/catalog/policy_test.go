package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logRecord is what a test checks of a log record.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// recordHandler is a slog.Handler that keeps every record. FilterTools runs
// no goroutines, so it needs no lock.
type recordHandler struct {
	records []logRecord
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := make(map[string]string)
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	h.records = append(h.records, logRecord{r.Level, r.Message, attrs})
	return nil
}

func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// A ToolPredicate decides whether the tool of a server is exposed. It gets a
// deep copy of the tool, named by its original name.
type ToolPredicate func(ctx context.Context, server string, tool *mcp.Tool) (bool, error)

// FilterTools is Filter for tools as the manager uses it: keep sees each
// tool's server and a deep copy of its definition under its original name.
func FilterTools(ctx context.Context, tools []Tool, keep ToolPredicate, logger *slog.Logger) []Tool {
	var f func(context.Context, Tool) (bool, error)
	if keep != nil {
		f = func(ctx context.Context, t Tool) (bool, error) {
			c := CloneTool(t.Tool)
			if c == nil {
				c = &mcp.Tool{}
			}
			c.Name = t.Original
			return keep(ctx, t.Server, c)
		}
	}
	return Filter(ctx, tools, "tool", func(t Tool) (string, string) { return t.Server, t.Original }, f, logger)
}

// filterView returns the tools of two servers as a View hands them out:
// cal__list, docs__delete and docs__search.
func filterView() []Tool {
	return Build([]Source{
		{Server: "docs", Prefix: "docs", Tools: []*mcp.Tool{richTool("search"), richTool("delete")}},
		{Server: "calendar", Prefix: "cal", Tools: []*mcp.Tool{richTool("list")}},
	}).Tools()
}

func names(tools []Tool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// seen is what a filter was called with.
type seen struct {
	Server string
	Tool   string
}

func TestFilterToolsContext(t *testing.T) {
	var got []seen
	filter := func(_ context.Context, server string, tool *mcp.Tool) (bool, error) {
		got = append(got, seen{server, tool.Name})
		return true, nil
	}
	kept := FilterTools(context.Background(), filterView(), filter, nil)

	want := []seen{
		{"calendar", "list"},
		{"docs", "delete"},
		{"docs", "search"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("filter calls mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names(filterView()), names(kept)); diff != "" {
		t.Errorf("kept tools mismatch (-want +got):\n%s", diff)
	}
}

// TestFilterToolsByAgent ports the reference runtime's check that the result
// depends on the agent asking (the manager makes the predicate of a query).
func TestFilterToolsByAgent(t *testing.T) {
	filter := func(agent string) ToolPredicate {
		return func(_ context.Context, server string, tool *mcp.Tool) (bool, error) {
			switch agent {
			case "admin":
				return true, nil
			case "reader":
				return tool.Name != "delete", nil
			case "docs-only":
				return server == "docs", nil
			}
			return false, nil
		}
	}
	tests := []struct {
		agent string
		want  []string
	}{
		{"admin", []string{"cal__list", "docs__delete", "docs__search"}},
		{"reader", []string{"cal__list", "docs__search"}},
		{"docs-only", []string{"docs__delete", "docs__search"}},
		{"stranger", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			got := FilterTools(context.Background(), filterView(), filter(tt.agent), nil)
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("FilterTools mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterToolsFailures(t *testing.T) {
	tests := []struct {
		name    string
		filter  ToolPredicate
		wantErr string
	}{
		{
			name: "error",
			filter: func(_ context.Context, _ string, tool *mcp.Tool) (bool, error) {
				if tool.Name == "delete" {
					return true, errors.New("policy store unavailable")
				}
				return true, nil
			},
			wantErr: "policy store unavailable",
		},
		{
			name: "panic",
			filter: func(_ context.Context, _ string, tool *mcp.Tool) (bool, error) {
				if tool.Name == "delete" {
					panic("boom")
				}
				return true, nil
			},
			wantErr: "panic: boom",
		},
		{
			name: "nil pointer panic",
			filter: func(_ context.Context, _ string, tool *mcp.Tool) (bool, error) {
				if tool.Name == "delete" {
					var extra map[string]any
					return extra["missing"].(map[string]any)["x"] == nil, nil
				}
				return true, nil
			},
			wantErr: "panic: interface conversion: interface {} is nil, not map[string]interface {}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &recordHandler{}
			got := FilterTools(context.Background(), filterView(), tt.filter, slog.New(h))
			if diff := cmp.Diff([]string{"cal__list", "docs__search"}, names(got)); diff != "" {
				t.Errorf("kept tools mismatch (-want +got):\n%s", diff)
			}
			want := []logRecord{{
				Level: slog.LevelError,
				Msg:   "dynamic tool filter failed; tool excluded",
				Attrs: map[string]string{"server": "docs", "tool": "delete", "err": tt.wantErr},
			}}
			if diff := cmp.Diff(want, h.records); diff != "" {
				t.Errorf("log mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterToolsNilLogger(t *testing.T) {
	failing := func(context.Context, string, *mcp.Tool) (bool, error) {
		return false, errors.New("no")
	}
	if got := FilterTools(context.Background(), filterView(), failing, nil); len(got) != 0 {
		t.Errorf("FilterTools kept %q, want nothing", names(got))
	}
}

func TestFilterToolsNilFilter(t *testing.T) {
	tests := []struct {
		name  string
		tools []Tool
		want  []string
	}{
		{"nil", nil, []string{}},
		{"empty", []Tool{}, []string{}},
		{"all", filterView(), []string{"cal__list", "docs__delete", "docs__search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FilterTools(context.Background(), tt.tools, nil, nil)
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("FilterTools mismatch (-want +got):\n%s", diff)
			}
			if len(got) > 0 && &got[0] == &tt.tools[0] {
				t.Errorf("FilterTools returned its input slice")
			}
		})
	}
}

// TestFilterToolsReturnsInputValues checks that kept tools are not copied
// again: the caller already holds copies.
func TestFilterToolsReturnsInputValues(t *testing.T) {
	in := filterView()
	keepAll := func(context.Context, string, *mcp.Tool) (bool, error) { return true, nil }
	got := FilterTools(context.Background(), in, keepAll, nil)
	if len(got) != len(in) {
		t.Fatalf("FilterTools kept %d tools, want %d", len(got), len(in))
	}
	for i := range in {
		if got[i] != in[i] {
			t.Errorf("tool %d = %+v, want the input value %+v", i, got[i], in[i])
		}
	}
}

// TestFilterToolsMutationIsolated ports the reference runtime's check that a
// filter that mutates its tool cannot corrupt the catalog.
func TestFilterToolsMutationIsolated(t *testing.T) {
	in := filterView()
	want := filterView()
	vandal := func(_ context.Context, _ string, tool *mcp.Tool) (bool, error) {
		mutate([]Tool{{Tool: tool}})
		return true, nil
	}
	got := FilterTools(context.Background(), in, vandal, nil)
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("input tools changed by the filter (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept tools changed by the filter (-want +got):\n%s", diff)
	}

	// A second run sees pristine copies, named by their original names.
	var seenTools []*mcp.Tool
	record := func(_ context.Context, _ string, tool *mcp.Tool) (bool, error) {
		seenTools = append(seenTools, tool)
		return true, nil
	}
	FilterTools(context.Background(), in, record, nil)
	wantSeen := []*mcp.Tool{richTool("list"), richTool("delete"), richTool("search")}
	if diff := cmp.Diff(wantSeen, seenTools); diff != "" {
		t.Errorf("second run saw (-want +got):\n%s", diff)
	}
	for i, tool := range seenTools {
		if tool == in[i].Tool {
			t.Errorf("filter got the caller's definition of %s, want a copy", in[i].Name)
		}
	}
}

func TestFilterToolsNilDefinition(t *testing.T) {
	var got *mcp.Tool
	filter := func(_ context.Context, _ string, tool *mcp.Tool) (bool, error) {
		got = tool
		return true, nil
	}
	FilterTools(context.Background(), []Tool{{Name: "p__t", Server: "s", Original: "t"}}, filter, nil)
	if diff := cmp.Diff(&mcp.Tool{Name: "t"}, got); diff != "" {
		t.Errorf("filter saw (-want +got):\n%s", diff)
	}
}

func TestFilterToolsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	filter := func(context.Context, string, *mcp.Tool) (bool, error) {
		calls++
		if calls == 1 {
			cancel()
			return true, nil
		}
		return false, fmt.Errorf("called after cancel")
	}
	h := &recordHandler{}
	got := FilterTools(ctx, filterView(), filter, slog.New(h))
	if diff := cmp.Diff([]string{"cal__list"}, names(got)); diff != "" {
		t.Errorf("kept tools mismatch (-want +got):\n%s", diff)
	}
	if calls != 1 {
		t.Errorf("filter called %d times, want 1", calls)
	}
	want := []logRecord{{
		Level: slog.LevelError,
		Msg:   "dynamic tool filter stopped; remaining tools excluded",
		Attrs: map[string]string{"excluded": "2", "err": "context canceled"},
	}}
	if diff := cmp.Diff(want, h.records); diff != "" {
		t.Errorf("log mismatch (-want +got):\n%s", diff)
	}
}

func TestGuard(t *testing.T) {
	tests := []struct {
		name    string
		f       func() (bool, error)
		want    bool
		wantErr string
	}{
		{"true", func() (bool, error) { return true, nil }, true, ""},
		{"error", func() (bool, error) { return true, errors.New("e") }, true, "e"},
		{"panic value", func() (bool, error) { panic(42) }, false, "panic: 42"},
		{"panic error", func() (bool, error) { panic(errors.New("x")) }, false, "panic: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Guard(tt.f)
			var gotErr string
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.wantErr {
				t.Errorf("Guard() = %v, %q; want %v, %q", got, gotErr, tt.want, tt.wantErr)
			}
		})
	}
}
