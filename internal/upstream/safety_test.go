package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func TestRequiredArgumentsCheckedBeforeSending(t *testing.T) {
	u, srv := connectedInMemory(t, mcptest.Script{}, config.Server{Retry: config.Retry{Max: 5}}, nil)
	_, err := callTool(t.Context(), u, "add", map[string]any{"a": 1})
	if !errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("add without b = %v, want ErrInvalidArguments naming b", err)
	}
	if !strings.HasPrefix(err.Error(), `server "mem": call tool "add": invalid arguments`) {
		t.Errorf("error %q does not name the server and the call", err)
	}
	if got := srv.Counts().Calls; got != 0 {
		t.Errorf("the server saw %d calls, want none: nothing is sent, no retry is spent", got)
	}
	if _, err := callTool(t.Context(), u, "add", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Errorf("add with a and b = %v", err)
	}
}

// TestCallSafetyClasses proves, with the server's execution counters, that
// a call that may have run is replayed only for tools that say they may run
// twice.
func TestCallSafetyClasses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		script    mcptest.Script
		timeout   int64
		tool      string
		wantErr   error // nil: success
		wantRuns  int
		wantCalls int // receipts, including the lost ones
	}{
		{"crash after a non-idempotent call ran", mcptest.Script{CrashAfterCall: 1}, 30000, "increment", ErrAmbiguous, 1, 1},
		{"crash after a read-only call ran: replayed", mcptest.Script{CrashAfterCall: 1}, 30000, "echo", nil, 2, 2},
		{"crash on receipt: unknown to the client", mcptest.Script{ExitOnCall: 1}, 30000, "increment", ErrAmbiguous, 0, 1},
		{"timeout of a non-idempotent call", mcptest.Script{CallDelay: time.Hour}, 1000, "increment", ErrAmbiguous, 0, 1},
		{"an error result is not retried", mcptest.Script{}, 30000, "fail", nil, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				u, srv := connectedInMemory(t, tc.script, config.Server{Timeout: ms(tc.timeout)}, nil)
				res, err := callTool(context.Background(), u, tc.tool, nil)
				if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("call = %v, %v; want error %v", res, err, tc.wantErr)
				}
				var amb *AmbiguousError
				if tc.wantErr == ErrAmbiguous && (!errors.As(err, &amb) || amb.Tool != tc.tool) {
					t.Errorf("error %v is not an *AmbiguousError for %s", err, tc.tool)
				}
				c := srv.Counts()
				if c.ByTool[tc.tool] != tc.wantRuns || c.Calls != tc.wantCalls {
					t.Errorf("%s ran %d times of %d received; want %d of %d", tc.tool, c.ByTool[tc.tool], c.Calls, tc.wantRuns, tc.wantCalls)
				}
			})
		})
	}
}

// TestClosedPipeMidCallIsAmbiguous: over a transport of the host's own
// (Options.Dial), an in-memory pipe whose read fails with io.ErrClosedPipe
// while a call runs says nothing of whether the call was written: it may
// have run, and a call that is not idempotent is not replayed.
func TestClosedPipeMidCallIsAmbiguous(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{CallDelay: time.Second})
		defer srv.Close()
		broken := make(chan struct{})
		first := true
		u := New(config.Server{Name: "mem", Command: "in-memory"}, &Options{Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) {
			tr, err := srv.ConnectInMemory(ctx)
			if first { // the first session breaks; the next ones do not
				first = false
				return &breakingTransport{Transport: tr, broken: broken}, err
			}
			return tr, err
		}})
		defer u.Close(time.Time{})
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := callTool(context.Background(), u, "increment", nil)
			done <- err
		}()
		synctest.Wait() // the server has the call, and waits out its delay
		close(broken)
		if err := <-done; !errors.Is(err, ErrAmbiguous) || !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("increment, its pipe broken while it ran: %v; want ErrAmbiguous, for io.ErrClosedPipe", err)
		}
		if c := srv.Counts(); c.Calls != 1 {
			t.Errorf("the server received %d calls, want 1: the call was replayed", c.Calls)
		}
	})
}

// breakingTransport's connection fails its reads with io.ErrClosedPipe once
// broken is closed, as an in-memory pipe does when it is closed under a
// read, and closes itself.
type breakingTransport struct {
	mcp.Transport
	broken <-chan struct{}
}

func (b *breakingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := b.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &breakingConn{Connection: c, broken: b.broken}, nil
}

type breakingConn struct {
	mcp.Connection
	broken <-chan struct{}
}

func (c *breakingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	type read struct {
		msg jsonrpc.Message
		err error
	}
	got := make(chan read, 1)
	go func() {
		msg, err := c.Connection.Read(ctx)
		got <- read{msg, err}
	}()
	select {
	case r := <-got:
		return r.msg, r.err
	case <-c.broken:
		c.Connection.Close() // ends the read above
		return nil, io.ErrClosedPipe
	}
}

func TestServerErrorAnswerIsNotRetried(t *testing.T) {
	u, srv := connectedInMemory(t, mcptest.Script{}, config.Server{}, nil)
	_, err := callTool(t.Context(), u, "no_such_tool", nil)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("call of a tool the server does not have = %v, want its -32602", err)
	}
	if got := srv.Counts().Calls; got != 1 {
		t.Errorf("%d calls received, want 1", got)
	}
}

// httpUpstream runs script behind a real listener and returns an upstream
// for it, connected, with the given config tweaks.
func httpUpstream(t *testing.T, script mcptest.Script, cfg config.Server) (*Upstream, *mcptest.Server, *mcptest.HTTPServer) {
	t.Helper()
	return httpUpstreamWith(t, script, cfg, nil)
}

// httpUpstreamWith is httpUpstream with options.
func httpUpstreamWith(t *testing.T, script mcptest.Script, cfg config.Server, opts *Options) (*Upstream, *mcptest.Server, *mcptest.HTTPServer) {
	t.Helper()
	srv := mcptest.NewServer(script)
	hs, err := mcptest.StartHTTP(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	cfg.Name, cfg.URL = "web", hs.URL
	u := New(cfg, opts)
	t.Cleanup(func() { u.Close(time.Time{}) })
	if err := u.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	return u, srv, hs
}

func TestHTTPNotDeliveredIsReplayedOnce(t *testing.T) {
	u, srv, _ := httpUpstream(t, mcptest.Script{}, config.Server{})
	srv.RejectPOSTs(http.StatusServiceUnavailable, 1, 0)
	if res, err := callTool(t.Context(), u, "increment", nil); err != nil || mcptest.Text(res) != "1" {
		t.Fatalf("increment after one 503 = %v, %v; want it replayed", res, err)
	}
	srv.RejectPOSTs(http.StatusServiceUnavailable, 2, 0)
	_, err := callTool(t.Context(), u, "increment", nil)
	if err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("increment after two 503s = %v, want the 503 (one replay only)", err)
	}
	if got := srv.Counts().ByTool["increment"]; got != 1 {
		t.Errorf("increment ran %d times, want 1", got)
	}
}

func TestHTTP429HonoursRetryAfter(t *testing.T) {
	u, srv, _ := httpUpstream(t, mcptest.Script{}, config.Server{})
	srv.RejectPOSTs(http.StatusTooManyRequests, 1, time.Second)
	start := time.Now()
	if _, err := callTool(t.Context(), u, "increment", nil); err != nil {
		t.Fatalf("increment after a 429 = %v", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("replayed after %v, before the server's Retry-After of 1s", waited)
	}
}

func TestHTTP500IsAmbiguous(t *testing.T) {
	u, srv, _ := httpUpstream(t, mcptest.Script{}, config.Server{})
	srv.RejectPOSTs(http.StatusInternalServerError, 1, 0)
	if _, err := callTool(t.Context(), u, "increment", nil); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("increment after a 500 = %v, want ErrAmbiguous", err)
	}
	srv.RejectPOSTs(http.StatusInternalServerError, 1, 0)
	if _, err := callTool(t.Context(), u, "echo", nil); err != nil {
		t.Errorf("echo after a 500 = %v, want it replayed (read-only)", err)
	}
}

func TestHTTPRefusedIsNotDelivered(t *testing.T) {
	u, srv, hs := httpUpstream(t, mcptest.Script{}, config.Server{})
	if err := hs.Stop(); err != nil {
		t.Fatal(err)
	}
	// A fresh session (with no pooled connection that the restart may have
	// killed after a request was written on it) meets a refusal.
	if err := reconnect(t.Context(), u); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("reconnect with the server down = %v, want the refusal", err)
	}
	_, err := callTool(t.Context(), u, "increment", nil)
	if !errors.Is(err, ErrReconnecting) && !errors.Is(err, ErrNotConnected) || errors.Is(err, ErrAmbiguous) {
		t.Errorf("increment with the server down = %v, want ErrReconnecting or ErrNotConnected: it was never sent", err)
	}
	if got := srv.Counts().Calls; got != 0 {
		t.Errorf("%d calls received", got)
	}
}

func TestClassify(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	readErr := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	rec := func(status int, err error, after time.Duration) *delivery {
		d := &delivery{}
		d.record(status, err, after)
		return d
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		err       error
		d         *delivery
		overHTTP  bool
		want      outcome
		wantDead  bool
		wantAfter time.Duration
	}{
		{"caller cancelled", done, errors.New("x"), rec(200, nil, 0), true, cancelled, false, 0},
		{"session missing", nil, fmt.Errorf("calling: %w", mcp.ErrSessionMissing), rec(404, nil, 0), true, notDelivered, true, 0},
		{"server's error answer", nil, &jsonrpc.Error{Code: -32602, Message: "bad"}, rec(200, nil, 0), true, deterministic, false, 0},
		{"closing before sending", nil, fmt.Errorf("%w: calling", mcp.ErrConnectionClosed), &delivery{}, false, notDelivered, true, 0},
		{"refused", nil, errors.New("rejected"), rec(0, dialErr, 0), true, notDelivered, true, 0},
		{"reset after sending", nil, errors.New("rejected"), rec(0, readErr, 0), true, ambiguous, false, 0},
		{"429", nil, errors.New("rejected"), rec(429, nil, 2*time.Second), true, notDelivered, false, 2 * time.Second},
		{"503", nil, errors.New("rejected"), rec(503, nil, 0), true, notDelivered, false, 0},
		{"500", nil, errors.New("rejected"), rec(500, nil, 0), true, ambiguous, false, 0},
		{"401", nil, errors.New("rejected"), rec(401, nil, 0), true, deterministic, false, 0},
		{"never reached http", nil, errors.New("x"), &delivery{}, true, notDelivered, false, 0},
		{"accepted, then lost", nil, errors.New("EOF"), rec(200, nil, 0), true, ambiguous, false, 0},
		{"stdio: broken pipe", nil, fmt.Errorf("write: %w", syscall.EPIPE), &delivery{}, false, notDelivered, true, 0},
		{"stdio: EOF after writing", nil, errors.New("EOF"), &delivery{}, false, ambiguous, true, 0},
		{"stdio: timeout", nil, context.DeadlineExceeded, &delivery{}, false, ambiguous, false, 0},
		{"response too large", nil, fmt.Errorf("read: %w", errResponseTooLarge), rec(200, nil, 0), true, deterministic, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			class, dead, after := classify(ctx, tc.err, tc.d, tc.overHTTP)
			if class != tc.want || dead != tc.wantDead || after != tc.wantAfter {
				t.Errorf("classify = %v, dead %v, wait %v; want %v, %v, %v", class, dead, after, tc.want, tc.wantDead, tc.wantAfter)
			}
		})
	}
}

func TestGenericRetries(t *testing.T) {
	u, srv, _ := httpUpstream(t, mcptest.Script{}, config.Server{Retry: config.Retry{Max: 2, BackoffMs: ms(1)}})
	srv.RejectPOSTs(http.StatusServiceUnavailable, 2, 0)
	if _, err := callTool(t.Context(), u, "increment", nil); err != nil {
		t.Errorf("with 2 retries, 2 failures = %v, want success on the third attempt", err)
	}
	srv.RejectPOSTs(http.StatusServiceUnavailable, 3, 0)
	if _, err := callTool(t.Context(), u, "increment", nil); err == nil {
		t.Error("with 2 retries, 3 failures succeeded")
	}
	if got := srv.Counts().ByTool["increment"]; got != 1 {
		t.Errorf("increment ran %d times, want 1", got)
	}
}

// The retry vectors of OpenAI's agents SDK (seed-behaviours §1.8 and §1.9).
func TestRetryBudgetVectors(t *testing.T) {
	delays := func(b *retryBudget, fresh bool) []time.Duration {
		var out []time.Duration
		for {
			d, ok := b.take(fresh)
			if !ok {
				return out
			}
			out = append(out, d/time.Second)
		}
	}
	secs := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n))
		}
		return out
	}
	ms := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name  string
		retry config.Retry
		fresh bool
		want  []time.Duration
	}{
		{"8 retries", config.Retry{Max: 8}, false, secs(1, 2, 4, 8, 16, 32, 64, 128)},
		{"capped at 64", config.Retry{Max: 9, MaxBackoffMs: 64000}, false, secs(1, 2, 4, 8, 16, 32, 64, 64, 64)},
		{"2 retries: 3 attempts", config.Retry{Max: 2}, false, secs(1, 2)},
		{"fresh sessions cost 2", config.Retry{Max: 6}, true, secs(1, 2, 4)},
		{"fresh with max 2: one", config.Retry{Max: 2}, true, secs(1)},
		{"no budget: one replay at once", config.Retry{}, false, secs(0)},
		{"base 250 ms", config.Retry{Max: 3, BackoffMs: ms(250)}, false, secs(0, 0, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, delays(newRetryBudget(tc.retry), tc.fresh)); diff != "" {
				t.Errorf("delays in seconds (-want +got):\n%s", diff)
			}
		})
	}
	unlimited := newRetryBudget(config.Retry{Max: -1})
	for i := range 1000 {
		if _, ok := unlimited.take(i%2 == 0); !ok {
			t.Fatalf("an unlimited budget refused retry %d", i)
		}
	}
}

// The pagination vectors of OpenAI's agents SDK (seed-behaviours §1.11).
func TestListPagesRetries(t *testing.T) {
	errPage := errors.New("page failed")
	pages := map[string]page[*mcp.Tool]{
		"":            {items: []*mcp.Tool{{Name: "a"}}, next: "second-page"},
		"second-page": {items: []*mcp.Tool{{Name: "b"}}},
	}
	for _, tc := range []struct {
		name     string
		fail     map[int]bool // which request numbers fail
		retry    config.Retry
		wantErr  bool
		wantSeen []string
	}{
		{"retries only the failed page", map[int]bool{1: true}, config.Retry{Max: 1, BackoffMs: new(int64)}, false, []string{"", "second-page", "second-page"}},
		{"shares the budget across pages", map[int]bool{0: true, 2: true}, config.Retry{Max: 1, BackoffMs: new(int64)}, true, []string{"", "", "second-page"}},
		{"unlimited: 3 failures, 4 attempts", map[int]bool{0: true, 1: true, 2: true}, config.Retry{Max: -1, BackoffMs: new(int64)}, false, []string{"", "", "", "", "second-page"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			tools, _, err := listPages(t.Context(), "tools", nil, newRetryBudget(tc.retry), func(_ context.Context, cursor string) (page[*mcp.Tool], error) {
				n := len(seen)
				seen = append(seen, cursor)
				if tc.fail[n] {
					return page[*mcp.Tool]{}, errPage
				}
				return pages[cursor], nil
			})
			if (err != nil) != tc.wantErr {
				t.Errorf("listPages = %v, %v; want error %v", tools, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantSeen, seen); diff != "" {
				t.Errorf("cursors requested (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("repeated cursor", func(t *testing.T) {
		_, _, err := listPages(t.Context(), "tools", nil, newRetryBudget(config.Retry{}), func(context.Context, string) (page[*mcp.Tool], error) {
			return page[*mcp.Tool]{next: "secret-cursor"}, nil
		})
		if err == nil || strings.Contains(err.Error(), "secret-cursor") {
			t.Errorf("repeated cursor = %v, want an error that does not show it", err)
		}
	})
	t.Run("a serialized server's slot is free during the backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			serial := make(chan struct{}, 1)
			failed := make(chan struct{})
			done := make(chan error)
			go func() {
				first := true
				_, _, err := listPages(t.Context(), "tools", serial, newRetryBudget(config.Retry{Max: 1}), func(context.Context, string) (page[*mcp.Tool], error) {
					if first {
						first = false
						close(failed)
						return page[*mcp.Tool]{}, errPage
					}
					return page[*mcp.Tool]{}, nil
				})
				done <- err
			}()
			<-failed
			synctest.Wait() // in the 1 s backoff
			select {
			case serial <- struct{}{}:
				<-serial
			default:
				t.Error("the slot is held through the backoff")
			}
			if err := <-done; err != nil {
				t.Errorf("listPages = %v", err)
			}
		})
	})
}

func TestCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{}, config.Server{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := callTool(ctx, u, "sleep", map[string]any{"ms": 60000.0})
			errc <- err
		}()
		synctest.Wait()
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call = %v, want context.Canceled", err)
		}
		synctest.Wait() // the notification reaches the server
		c := srv.Counts()
		if c.Cancelled != 1 || c.Calls != 1 {
			t.Errorf("server: %d cancelled of %d calls; want the call cancelled upstream, not retried", c.Cancelled, c.Calls)
		}
	})
}

// TestSiblingsUnharmed runs 64 calls at once on one session: one fails, one
// is cancelled, one crashes nothing; the other 62 all succeed.
func TestSiblingsUnharmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := connectedInMemory(t, mcptest.Script{}, config.Server{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		failures := 0
		for i := range 64 {
			wg.Go(func() {
				callCtx, tool := context.Background(), "sleep"
				switch i {
				case 0:
					callCtx = ctx
				case 1:
					tool = "no_such_tool"
				}
				res, err := callTool(callCtx, u, tool, map[string]any{"ms": 1000.0})
				if i > 1 && (err != nil || res.IsError) {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			})
		}
		synctest.Wait()
		cancel()
		wg.Wait()
		if failures != 0 {
			t.Errorf("%d sibling calls failed", failures)
		}
	})
}

func TestSerializeRequests(t *testing.T) {
	for _, tc := range []struct {
		serialize bool
		want      time.Duration
	}{{false, time.Second}, {true, 10 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			u, _ := connectedInMemory(t, mcptest.Script{}, config.Server{SerializeRequests: tc.serialize}, nil)
			start := time.Now()
			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() {
					if _, err := callTool(context.Background(), u, "sleep", map[string]any{"ms": 1000.0}); err != nil {
						t.Errorf("call: %v", err)
					}
				})
			}
			wg.Wait()
			if got := time.Since(start); got != tc.want {
				t.Errorf("serializeRequests %v: 10 one-second calls took %v, want %v", tc.serialize, got, tc.want)
			}
		})
	}
}

func TestInFlightCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{}, config.Server{MaxInFlight: 2}, nil)
		start := time.Now()
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if _, err := callTool(context.Background(), u, "sleep", map[string]any{"ms": 1000.0}); err != nil {
					t.Errorf("call: %v", err)
				}
			})
		}
		synctest.Wait()
		// The slots are taken: a call that cannot wait gives up unsent.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := callTool(ctx, u, "increment", nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call over the cap = %v, want its deadline", err)
		}
		wg.Wait()
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("5 one-second calls, 2 at a time, took %v, want 3s", got)
		}
		if got := srv.Counts().ByTool["increment"]; got != 0 {
			t.Errorf("the call over the cap was sent")
		}
	})
}

// TestNullArgumentsAreSentAsAnObject: JavaScript servers reject "arguments":
// null, so every form of no arguments is sent as {}.
func TestNullArgumentsAreSentAsAnObject(t *testing.T) {
	var nilMap map[string]any
	var nilPointer *struct{ A int }
	for _, args := range []any{nil, nilMap, nilPointer, json.RawMessage(nil), json.RawMessage(" null ")} {
		got, err := checkArguments(nil, args)
		if err != nil {
			t.Fatalf("checkArguments(%#v) = %v", args, err)
		}
		if b, _ := json.Marshal(got); string(b) != "{}" {
			t.Errorf("checkArguments(%#v) are sent as %s, want {}", args, b)
		}
	}
	if got, _ := checkArguments(nil, json.RawMessage(`{"a":1}`)); string(got.(json.RawMessage)) != `{"a":1}` {
		t.Errorf("raw arguments are not sent as they are: %s", got)
	}
	// Null is checked as {}: a tool that requires an argument refuses it.
	info := indexTools([]*mcp.Tool{{Name: "add", InputSchema: map[string]any{
		"type": "object", "required": []any{"a"}, "properties": map[string]any{"a": map[string]any{"type": "number"}},
	}}})["add"]
	if _, err := checkArguments(info, nil); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("null arguments of a tool that requires one = %v, want ErrInvalidArguments", err)
	}
}

// TestLossOfAnHTTPServerNamesWhatBrokeIt: a call that finds an HTTP server
// gone ends its session, and the session's cause of loss is what the call
// met, not what the close met afterwards (a DELETE to the same dead
// server).
func TestLossOfAnHTTPServerNamesWhatBrokeIt(t *testing.T) {
	var log eventLog
	u, _, hs := httpUpstreamWith(t, mcptest.Script{}, config.Server{}, &Options{OnEvent: log.add})
	hs.Stop()
	if _, err := callTool(t.Context(), u, "echo", nil); err == nil {
		t.Fatal("a call to a stopped server succeeded")
	}
	losses := log.errs(Reconnecting)
	if len(losses) == 0 {
		t.Fatal("no loss was published")
	}
	if msg := losses[0].Error(); strings.Contains(msg, "Delete") || !strings.Contains(msg, "connection lost") {
		t.Errorf("cause of loss = %q, want what the call met, not the DELETE", msg)
	}
}

// TestRawArgumentsThatAreNotAnObject: raw JSON that is not an object, or not
// JSON, is refused as invalid arguments before anything is sent, with or
// without required arguments, rather than failing to encode once counted
// as sent.
func TestRawArgumentsThatAreNotAnObject(t *testing.T) {
	for _, raw := range []string{`{"a":`, `[1]`, `"text"`, `not json`} {
		if _, err := checkArguments(nil, json.RawMessage(raw)); !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("checkArguments(%s) = %v, want ErrInvalidArguments", raw, err)
		}
	}
}
