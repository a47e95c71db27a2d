//lint:file-ignore SA1019 The tests set a logging level, which the gateway forwards.

package gateway

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestSubscriptionReachesOnlyItsSubscribers: resources/updated reaches the
// sessions subscribed to that URI, no other; the server's subscription is
// held while any session wants it, and dropped after the last one
// unsubscribes or disconnects. Modern clients subscribe with
// subscriptions/listen, legacy ones with resources/subscribe: b is legacy.
func TestSubscriptionReachesOnlyItsSubscribers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}, {URI: "mem://b", Name: "b"}}})
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		subscriber := func(version string) (*mcp.ClientSession, chan string) {
			updates := make(chan string, 10)
			return clientWith(t, g, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				updates <- req.Params.URI
			}}, &mcp.ClientSessionOptions{ProtocolVersion: version}), updates
		}
		subscribe := func(cs *mcp.ClientSession, uri string) {
			t.Helper()
			if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
		held := func(want ...string) {
			t.Helper()
			synctest.Wait()
			if diff := cmp.Diff(want, srv.Subscriptions(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the server's subscriptions (-want +got):\n%s", diff)
			}
		}
		a, toA := subscriber("")
		b, toB := subscriber(legacy)
		c, toC := subscriber("")
		subscribe(a, "mem://a")
		subscribe(b, "mem://a")
		subscribe(b, "mem://b")
		subscribe(c, "mem://b")
		held("mem://a", "mem://b")

		// Each update of a goes before one of b: a session that got a
		// wrongly would see it first.
		srv.NotifyResourceUpdated("mem://a")
		srv.NotifyResourceUpdated("mem://b")
		synctest.Wait()
		for name, tc := range map[string]struct {
			got  chan string
			want []string
		}{"a": {toA, []string{"mem://a"}}, "b": {toB, []string{"mem://a", "mem://b"}}, "c": {toC, []string{"mem://b"}}} {
			var got []string
			for len(tc.got) > 0 {
				got = append(got, <-tc.got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("session %s got updates (-want +got):\n%s", name, diff)
			}
		}

		// b leaves a: a still holds it. a leaves: no one does.
		if err := b.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "mem://a"}); err != nil {
			t.Fatal(err)
		}
		held("mem://a", "mem://b")
		if err := a.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "mem://a"}); err != nil {
			t.Fatal(err)
		}
		held("mem://b")
		// b disconnects: c still holds b. c disconnects: no one does.
		b.Close()
		held("mem://b")
		c.Close()
		held()
	})
}

// TestSlowSubscribeBlocksNoOtherClient: while a server is slow to
// subscribe for one client, other clients connect and call.
func TestSlowSubscribeBlocksNoOtherClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := resourceServer("mem://a")
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		_, answered := subscribeHeld(t, g, srv, "mem://a")

		b := legacyClient(t, g, nil)
		if err := b.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		if res, err := b.CallTool(t.Context(), &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
			t.Errorf("b's call while a subscribes: %v %v", res, err)
		}
		answered()
	})
}

// resourceServer is a test server with one resource, uri.
func resourceServer(uri string) *mcptest.Server {
	return mcptest.NewServer(mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: uri, Name: uri}}})
}

// subscribeHeld has a new client of g subscribe to uri while srv holds
// every subscribe, and returns once the request waits upstream. answered
// waits for srv's answer: it fails t if the subscribe ended before release
// was called, or failed after.
func subscribeHeld(t *testing.T, g *Gateway, srv *mcptest.Server, uri string) (a *mcp.ClientSession, answered func()) {
	t.Helper()
	release := srv.BlockSubscribe()
	t.Cleanup(release)
	a = legacyClient(t, g, nil)
	subscribed := make(chan error, 1)
	go func() { subscribed <- a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}) }()
	synctest.Wait()
	return a, func() {
		t.Helper()
		select {
		case err := <-subscribed:
			t.Fatalf("the subscribe to %s ended (%v) before the server answered", uri, err)
		default:
		}
		release()
		if err := <-subscribed; err != nil {
			t.Errorf("the subscribe to %s: %v", uri, err)
		}
	}
}

// TestHungSubscribeHoldsUpOnlyItsURI: while one server never answers a
// subscribe, another server's subscribe goes through at once, and so does
// the end of a session that held a subscription of the other server.
func TestHungSubscribeHoldsUpOnlyItsURI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hung, live := resourceServer("mem://hung"), resourceServer("mem://live")
		_, g := setup(t, upstreams{"hung": hung, "live": live}, []config.Server{entry("hung", false), entry("live", false)}, nil)
		_, answered := subscribeHeld(t, g, hung, "mem://hung")

		// In the bubble, time passes only while every goroutine waits: a
		// subscribe held up by the hung one would return after some.
		b := legacyClient(t, g, nil)
		start := time.Now()
		if err := b.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://live"}); err != nil {
			t.Fatalf("b's subscribe of the other server: %v", err)
		}
		if waited := time.Since(start); waited > 0 {
			t.Errorf("b's subscribe of the other server waited %v for the hung one", waited)
		}
		if got := live.Subscriptions(); !slices.Equal(got, []string{"mem://live"}) {
			t.Fatalf("the live server's subscriptions = %v, want mem://live", got)
		}

		start = time.Now()
		b.Close()
		synctest.Wait()
		if got := live.Subscriptions(); len(got) != 0 {
			t.Errorf("after b ended, the live server still has subscriptions %v", got)
		}
		if waited := time.Since(start); waited > 0 {
			t.Errorf("b's end waited %v for the hung subscribe", waited)
		}
		answered()
	})
}

// TestSessionEndedDuringItsSubscribe: a session that ends while its
// subscribe waits upstream leaves no upstream subscription behind once
// the server answers.
func TestSessionEndedDuringItsSubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := resourceServer("mem://a")
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		release := srv.BlockSubscribe()
		defer release()
		a := legacyClient(t, g, nil)
		go a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "mem://a"})
		synctest.Wait() // a's subscribe waits upstream
		a.Close()
		synctest.Wait()
		release()
		synctest.Wait()
		if got := srv.Subscriptions(); len(got) != 0 {
			t.Errorf("after a ended during its subscribe, the server holds subscriptions %v", got)
		}
	})
}

// TestHungSetLevelHoldsUpNoOtherSession: while a server never answers the
// logging level one session asked for, another session's level change and
// a third session's end go through at once; the level the sessions want
// by then is asked for once the server answers.
func TestHungSetLevelHoldsUpNoOtherSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo"}}})
		_, g := setup(t, upstreams{"s": srv}, []config.Server{entry("s", false)}, nil)
		c := legacyClient(t, g, nil)
		if err := c.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
			t.Fatal(err)
		}
		release := srv.BlockSetLevel()
		defer release()
		a := legacyClient(t, g, nil)
		go a.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"})
		synctest.Wait() // a's level waits upstream

		// In the bubble, time passes only while every goroutine waits: a
		// request held up by the hung one would return after some.
		b := legacyClient(t, g, nil)
		start := time.Now()
		if err := b.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if waited := time.Since(start); waited > 0 {
			t.Errorf("b's level and c's end waited %v for the hung server", waited)
		}
		release()
		synctest.Wait()
		if got := srv.LoggingLevel(); got != "debug" {
			t.Errorf("the server's level is %q, want b's %q, the most verbose asked for", got, "debug")
		}
	})
}
