package mcptest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolsListed(t *testing.T) {
	s := NewServer(Script{})
	defer s.Close()
	cs := connectMemory(t, s, nil)

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	type view struct {
		Annotations *mcp.ToolAnnotations
		Schema      any
	}
	got := map[string]view{}
	for _, tool := range res.Tools {
		got[tool.Name] = view{tool.Annotations, tool.InputSchema}
	}
	object := map[string]any{"type": "object"}
	want := map[string]view{
		"echo": {&mcp.ToolAnnotations{ReadOnlyHint: true}, object},
		"add": {&mcp.ToolAnnotations{ReadOnlyHint: true}, map[string]any{
			"type": "object",
			"properties": map[string]any{
				"a": map[string]any{"type": "number", "description": "the first addend"},
				"b": map[string]any{"type": "number", "description": "the second addend"},
			},
			"required": []any{"a", "b"},
		}},
		"fail": {nil, object},
		"sleep": {nil, map[string]any{
			"type": "object",
			"properties": map[string]any{
				"ms": map[string]any{"type": "number", "description": "how long to wait, in milliseconds"},
			},
		}},
		"big":       {nil, object},
		"increment": {nil, object},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got, want := cs.InitializeResult().ServerInfo.Name, "mcptest"; got != want {
		t.Errorf("server name = %q, want %q", got, want)
	}
}

func TestScriptToolsAndNonObjectSchema(t *testing.T) {
	s := NewServer(Script{
		Name:         "custom",
		Instructions: "be nice",
		Tools: []ToolSpec{
			{Name: "a", Description: "A", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
			{Name: "broken", InputSchema: map[string]any{"type": "string"}},
		},
	})
	defer s.Close()
	cs := connectMemory(t, s, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	got := map[string]any{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool.InputSchema
	}
	want := map[string]any{
		"a":      map[string]any{"type": "object"},
		"broken": map[string]any{"type": "string"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schemas (-want +got):\n%s", diff)
	}
	ir := cs.InitializeResult()
	if ir.ServerInfo.Name != "custom" || ir.Instructions != "be nice" {
		t.Errorf("InitializeResult = %+v %q, want name custom and instructions", ir.ServerInfo, ir.Instructions)
	}
}

func TestPagination(t *testing.T) {
	s := NewServer(Script{PageSize: 2})
	defer s.Close()
	cs := connectMemory(t, s, nil)
	ctx := context.Background()

	first, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(first.Tools) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q; want 2 tools and a cursor", len(first.Tools), first.NextCursor)
	}
	names, err := ToolNames(ctx, cs)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	want := []string{"add", "big", "echo", "fail", "increment", "sleep"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	// One page alone, then three pages.
	if got, want := s.Counts().ListTools, 4; got != want {
		t.Errorf("ListTools count = %d, want %d", got, want)
	}
}

func TestBehaviors(t *testing.T) {
	s := NewServer(Script{ResponseBytes: 10, Tools: append(DefaultTools(),
		ToolSpec{Name: "odd", Behavior: "odd"},
	)})
	defer s.Close()
	cs := connectMemory(t, s, nil)
	ctx := context.Background()

	tests := []struct {
		tool    string
		args    map[string]any
		want    string
		isError bool
	}{
		{tool: "echo", args: map[string]any{"b": 1, "a": "x"}, want: `{"a":"x","b":1}`},
		{tool: "echo", want: `{}`},
		{tool: "fail", want: "tool fail failed", isError: true},
		{tool: "sleep", args: map[string]any{"ms": 0}, want: "slept 0 ms"},
		{tool: "sleep", args: map[string]any{"ms": "soon"}, want: "tool sleep: ms must be a number", isError: true},
		{tool: "big", want: "xxxxxxxxxx"},
		{tool: "add", args: map[string]any{"a": 1, "b": 2.5}, want: "3.5"},
		{tool: "add", args: map[string]any{"a": 1}, want: "tool add: arguments a and b must be numbers", isError: true},
		{tool: "increment", want: "1"},
		{tool: "increment", want: "2"},
		{tool: "odd", want: `tool odd: unknown behavior "odd"`, isError: true},
	}
	for _, tt := range tests {
		got, isError, err := callText(ctx, cs, tt.tool, tt.args)
		if err != nil {
			t.Errorf("%s(%v): %v", tt.tool, tt.args, err)
			continue
		}
		if got != tt.want || isError != tt.isError {
			t.Errorf("%s(%v) = %q, isError %v; want %q, %v", tt.tool, tt.args, got, isError, tt.want, tt.isError)
		}
	}

	if _, _, err := callText(ctx, cs, "nope", nil); err == nil {
		t.Errorf("calling an unknown tool: no error")
	}
	want := Counts{
		Starts:    1,
		ListTools: 0,
		Calls:     len(tests) + 1,
		ByTool:    map[string]int{"echo": 2, "fail": 1, "sleep": 2, "big": 1, "add": 2, "increment": 2, "odd": 1},
	}
	if diff := cmp.Diff(want, s.Counts()); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
}

func TestBigDefaultSize(t *testing.T) {
	s := NewServer(Script{})
	defer s.Close()
	cs := connectMemory(t, s, nil)
	got, _, err := callText(context.Background(), cs, "big", nil)
	if err != nil {
		t.Fatalf("big: %v", err)
	}
	if len(got) != DefaultResponseBytes || strings.Trim(got, "x") != "" {
		t.Errorf("big returned %d bytes, want %d bytes of x", len(got), DefaultResponseBytes)
	}
}

func TestSleepUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{})
		defer s.Close()
		cs := connectMemory(t, s, nil)
		ctx := context.Background()

		start := time.Now()
		got, _, err := callText(ctx, cs, "sleep", map[string]any{"ms": 5000})
		if err != nil {
			t.Fatalf("sleep: %v", err)
		}
		if got != "slept 5000 ms" {
			t.Errorf("sleep = %q", got)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("sleep took %v, want 5s", d)
		}

		// A cancelled sleep ends with the context.
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start = time.Now()
		if _, _, err := callText(cctx, cs, "sleep", map[string]any{"ms": 60000}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled sleep: err = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("cancelled sleep took %v, want 1s", d)
		}
	})
}

func TestCallDelayUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{CallDelay: 2 * time.Second})
		defer s.Close()
		cs := connectMemory(t, s, nil)
		ctx := context.Background()

		start := time.Now()
		if _, _, err := callText(ctx, cs, "echo", nil); err != nil {
			t.Fatalf("echo: %v", err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("echo took %v, want 2s", d)
		}

		// Cancelled during the delay: received, never run.
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, _, err := callText(cctx, cs, "increment", nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled call: err = %v, want DeadlineExceeded", err)
		}
		synctest.Wait()
		want := Counts{Starts: 1, Calls: 2, ByTool: map[string]int{"echo": 1}}
		if diff := cmp.Diff(want, s.Counts()); diff != "" {
			t.Errorf("Counts (-want +got):\n%s", diff)
		}
	})
}

func TestHangBehaviorReleasedByClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{Tools: []ToolSpec{{Name: "hang", Behavior: Hang}}})
		cs := connectMemory(t, s, nil)
		errc := make(chan error, 1)
		go func() {
			_, _, err := callText(context.Background(), cs, "hang", nil)
			errc <- err
		}()
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("hang returned early: %v", err)
		default:
		}
		s.Close()
		if err := <-errc; err == nil {
			t.Errorf("hang after Close: no error")
		}
	})
}

func TestStartDelay(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "modern", true: "legacy"}[legacy], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewServer(Script{StartDelay: 3 * time.Second, LegacyOnly: legacy})
				defer s.Close()
				tr, err := s.ConnectInMemory(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				cs, err := newClient(nil).Connect(context.Background(), tr, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if d := time.Since(start); d != 3*time.Second {
					t.Errorf("Connect took %v, want the 3s delay", d)
				}
			})
		})
	}
}

func TestHangOnInitialize(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "modern", true: "legacy"}[legacy], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewServer(Script{HangOnInitialize: true, LegacyOnly: legacy})
				defer s.Close()

				// A deadline ends the attempt.
				tr, err := s.ConnectInMemory(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				start := time.Now()
				if _, err := newClient(nil).Connect(ctx, tr, nil); err == nil {
					t.Fatal("Connect to a hung server succeeded")
				}
				if d := time.Since(start); d != time.Second {
					t.Errorf("Connect failed after %v, want 1s", d)
				}

				// Close releases a hang that nothing else would end.
				tr, err = s.ConnectInMemory(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				errc := make(chan error, 1)
				go func() {
					cs, err := newClient(nil).Connect(context.Background(), tr, nil)
					if err == nil {
						cs.Close()
					}
					errc <- err
				}()
				synctest.Wait()
				select {
				case err := <-errc:
					t.Fatalf("Connect returned before Close: %v", err)
				default:
				}
				s.Close()
				if err := <-errc; err == nil {
					t.Error("Connect succeeded after Close")
				}
				if got := s.Counts().Starts; got != 0 {
					t.Errorf("Starts = %d, want 0", got)
				}
			})
		})
	}
}

func TestHangOnListTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{HangOnListTools: true})
		defer s.Close()
		cs := connectMemory(t, s, nil)

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := cs.ListTools(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ListTools: err = %v, want DeadlineExceeded", err)
		}
		// Calls still work.
		if _, _, err := callText(context.Background(), cs, "echo", nil); err != nil {
			t.Errorf("echo: %v", err)
		}

		// The session closing releases the hang too. (ClientSession.Close would
		// wait for the answer: the go-sdk closes gracefully.)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.ListTools(context.Background(), nil)
			errc <- err
		}()
		synctest.Wait()
		s.Restart()
		if err := <-errc; err == nil {
			t.Error("ListTools succeeded on a closed session")
		}
		synctest.Wait()
		if got := s.Counts().ListTools; got != 2 {
			t.Errorf("ListTools count = %d, want 2", got)
		}
	})
}

// waitClosed waits for the session to end, as the server closed it, and
// checks that a later call fails with ErrConnectionClosed.
func waitClosed(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	_ = cs.Wait()
	_, _, err := callText(context.Background(), cs, "echo", nil)
	if !isClosedErr(err) {
		t.Errorf("call after exit: err = %v, want ErrConnectionClosed", err)
	}
}

func TestExitAfterInitialize(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "modern", true: "legacy"}[legacy], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewServer(Script{ExitAfterInitialize: true, LegacyOnly: legacy})
				defer s.Close()
				cs := connectMemory(t, s, nil)
				waitClosed(t, cs)
				if got := s.Counts().Starts; got != 1 {
					t.Errorf("Starts = %d, want 1", got)
				}
			})
		})
	}
}

func TestExitAfterListTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{ExitAfterListTools: true})
		defer s.Close()
		cs := connectMemory(t, s, nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		if len(res.Tools) != len(DefaultTools()) {
			t.Errorf("got %d tools, want %d", len(res.Tools), len(DefaultTools()))
		}
		waitClosed(t, cs)

		// A new session answers its own first list, then exits too.
		cs2 := connectMemory(t, s, nil)
		if _, err := cs2.ListTools(context.Background(), nil); err != nil {
			t.Fatalf("second ListTools: %v", err)
		}
		waitClosed(t, cs2)
	})
}

func TestExitOnCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{ExitOnCall: 2})
		defer s.Close()
		cs := connectMemory(t, s, nil)
		ctx := context.Background()
		if got, _, err := callText(ctx, cs, "increment", nil); err != nil || got != "1" {
			t.Fatalf("first call = %q, %v; want 1", got, err)
		}
		if _, _, err := callText(ctx, cs, "increment", nil); err == nil {
			t.Fatal("second call succeeded; want the server to exit")
		}
		waitClosed(t, cs)

		// The count is over the server's lifetime: the third call is fine.
		cs2 := connectMemory(t, s, nil)
		if got, _, err := callText(ctx, cs2, "increment", nil); err != nil || got != "2" {
			t.Errorf("third call = %q, %v; want 2", got, err)
		}
		want := Counts{Starts: 2, Calls: 3, ByTool: map[string]int{"increment": 2}}
		if diff := cmp.Diff(want, s.Counts()); diff != "" {
			t.Errorf("Counts (-want +got):\n%s", diff)
		}
	})
}

func TestSetToolsNotifies(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "modern", true: "legacy"}[legacy], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewServer(Script{LegacyOnly: legacy})
				defer s.Close()
				changed := make(chan struct{}, 10)
				cs := connectMemory(t, s, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
				})
				ctx := context.Background()
				if _, err := cs.ListTools(ctx, nil); err != nil {
					t.Fatal(err)
				}

				s.SetTools([]ToolSpec{{Name: "one"}, {Name: "two", Behavior: Fail}})
				<-changed
				names, err := ToolNames(ctx, cs)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]string{"one", "two"}, names); diff != "" {
					t.Errorf("tools after SetTools (-want +got):\n%s", diff)
				}
				if got, isError, _ := callText(ctx, cs, "two", nil); !isError || got != "tool two failed" {
					t.Errorf("two = %q, %v; want a failure", got, isError)
				}
				if _, _, err := callText(ctx, cs, "echo", nil); err == nil {
					t.Error("removed tool echo still answers")
				}
				synctest.Wait()
				if n := len(changed); n != 0 {
					t.Errorf("%d extra notifications", n)
				}
			})
		})
	}
}

func TestNotifyToolsChangedStorm(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "modern", true: "legacy"}[legacy], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewServer(Script{LegacyOnly: legacy})
				defer s.Close()
				const n = 1000
				changed := make(chan struct{}, n+1)
				connectMemory(t, s, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
				})
				for range n {
					s.NotifyToolsChanged()
				}
				synctest.Wait()
				if got := len(changed); got != n {
					t.Errorf("got %d notifications, want %d", got, n)
				}
			})
		})
	}
}

func TestRestartClosesInMemorySessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{})
		defer s.Close()
		cs := connectMemory(t, s, nil)
		s.Restart()
		waitClosed(t, cs)
		cs2 := connectMemory(t, s, nil)
		if _, _, err := callText(context.Background(), cs2, "echo", nil); err != nil {
			t.Errorf("call after Restart: %v", err)
		}
	})
}

func TestCloseIsIdempotent(t *testing.T) {
	s := NewServer(Script{})
	cs := connectMemory(t, s, nil)
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	<-done
	waitClosed(t, cs)
	if _, err := s.ConnectInMemory(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("ConnectInMemory after Close: err = %v, want ErrClosed", err)
	}
}

func TestCrashAfterCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Script{CrashAfterCall: 1})
		defer s.Close()
		cs := connectMemory(t, s, nil)
		if _, _, err := callText(context.Background(), cs, "increment", nil); err == nil {
			t.Fatal("the call was answered; want the server to crash after running it")
		}
		waitClosed(t, cs)
		if got := s.Counts().ByTool["increment"]; got != 1 {
			t.Errorf("increment ran %d times, want 1: the crash comes after the tool", got)
		}
		cs2 := connectMemory(t, s, nil)
		if got, _, err := callText(context.Background(), cs2, "increment", nil); err != nil || got != "2" {
			t.Errorf("next call = %q, %v; want 2 (the first one ran)", got, err)
		}
	})
}

func TestPingModes(t *testing.T) {
	for _, tc := range []struct {
		mode PingMode
		code int64 // 0: answered
	}{
		{PingAnswer, 0},
		{PingMethodNotFound, jsonrpc.CodeMethodNotFound},
		{PingFail, jsonrpc.CodeInternalError},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			s := NewServer(Script{Ping: tc.mode})
			defer s.Close()
			cs := connectMemory(t, s, nil)
			err := cs.Ping(context.Background(), nil)
			var rpcErr *jsonrpc.Error
			switch {
			case tc.code == 0 && err != nil:
				t.Errorf("Ping = %v, want an answer", err)
			case tc.code != 0 && (!errors.As(err, &rpcErr) || rpcErr.Code != tc.code):
				t.Errorf("Ping = %v, want JSON-RPC code %d", err, tc.code)
			}
		})
	}
	t.Run("hang", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := NewServer(Script{Ping: PingHang})
			defer s.Close()
			cs := connectMemory(t, s, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := cs.Ping(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Ping = %v, want the deadline", err)
			}
		})
	})
}
