package switchboard

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// Events: what the manager tells its subscribers, and when.

func TestEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("good", mcptest.Script{Tools: tools("t")})
		f.add("bad", mcptest.Script{})
		f.fail("bad", errors.New("refused"))
		good, bad := server("good"), server("bad")
		bad.Source = "/etc/switchboard/mcp.json"
		m := f.managerWith(&Options{Cache: CacheOff}, good, bad)
		var mu sync.Mutex
		var got []string
		m.Subscribe(func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Kind {
			case EventState:
				s := ev.Server + " " + ev.State.String()
				if ev.Source != "" {
					s += " (" + ev.Source + ")"
				}
				got = append(got, s)
			case EventChanged:
				got = append(got, "changed +"+strings.Join(ev.Tools.Added, ","))
			}
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, want := range []string{"good connecting", "bad connecting", "good connected", "bad failed (/etc/switchboard/mcp.json)", "changed +good__t"} {
			found := false
			for _, g := range got {
				found = found || g == want
			}
			if !found {
				t.Errorf("events %q lack %q", got, want)
			}
		}
	})
}

func TestEventBacklogUntilFirstSubscriber(t *testing.T) {
	m := New(&config.Config{}, &Options{Cache: CacheOff})
	for i := range 150 {
		m.emit(Event{Kind: EventResourceUpdated, URI: string(rune('a' + i%26))})
	}
	var got []Event
	done := make(chan struct{})
	m.Subscribe(func(ev Event) {
		got = append(got, ev)
		if len(got) == backlogSize {
			close(done)
		}
	})
	<-done
	m.Close()
	if len(got) != backlogSize {
		t.Errorf("the first subscriber got %d events, want the last %d", len(got), backlogSize)
	}
	if got[0].URI != string(rune('a'+50%26)) {
		t.Errorf("the first kept event is %q, want the 51st: the oldest are dropped", got[0].URI)
	}
}

// TestRevisionsAreTheGatewaysAlone: every reconfiguration makes a new
// revision of the view, which the gateway's hooks follow; a subscriber
// never sees it, and it takes no place in the backlog.
func TestRevisionsAreTheGatewaysAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("s", mcptest.Script{Tools: tools("t")})
		m := f.managerWith(&Options{Cache: CacheOff}, server("s"))
		if len(m.subs.backlog) != 0 {
			t.Errorf("backlog before any subscriber: %v, want no revision in it", m.subs.backlog)
		}
		var mu sync.Mutex
		var kinds []EventKind
		m.Subscribe(func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			kinds = append(kinds, ev.Kind)
		})
		h := gatewayHooks{m}
		revised := make(chan uint64, 10)
		stop := h.Follow(func() { revised <- h.Revision() })
		defer stop()
		before := h.Revision()
		cfg := &config.Config{Servers: []config.Server{server("s")}, ToolSearch: config.ToolSearch{Mode: config.ToolSearchOn}}
		if _, err := m.Reconfigure(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-revised:
			if got <= before {
				t.Errorf("revision after a reconfiguration = %d, want more than %d", got, before)
			}
		default:
			t.Error("Reconfigure returned before the hooks were told of its revision")
		}
		if got := h.ToolSearch(); got != cfg.ToolSearch {
			t.Errorf("ToolSearch after the reconfiguration = %v, want the config's %v", got, cfg.ToolSearch)
		}
		mu.Lock()
		defer mu.Unlock()
		if slices.Contains(kinds, eventRevised) {
			t.Errorf("a subscriber got a revision: %v", kinds)
		}
	})
}

func TestReloadFailedEventNamesTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{Tools: tools("alpha")})
		m := f.managerWith(&Options{Cache: CacheOff}, server("s"))
		failed := mcptest.Await(m.Subscribe, func(ev Event) bool { return ev.Kind == EventReloadFailed })
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv.FailListTools(100)
		srv.SetTools(tools("beta"))
		ev := <-failed
		if ev.Server != "s" || ev.List != "tools" || ev.Err == nil {
			t.Errorf("reload-failed event = %+v, want server s, list tools and the cause", ev)
		}
		if diff := cmp.Diff([]string{"s__alpha"}, names(m.Tools(t.Context(), nil))); diff != "" {
			t.Errorf("tools after a failed reload (-want +got):\n%s", diff)
		}
	})
}

func TestToolsChangedEvent(t *testing.T) {
	f := newFleet(t)
	f.add("a", mcptest.Script{Tools: tools("x", "y")})
	m := f.manager(server("a"))
	got := make(chan Event, 10)
	unsubscribe := m.Subscribe(func(ev Event) {
		if ev.Kind == EventChanged {
			// Listeners hear of a change after the view is updated.
			if n := len(m.Tools(t.Context(), nil)); n != len(ev.Tools.Added) {
				t.Errorf("Tools() has %d tools when the event reports %d added", n, len(ev.Tools.Added))
			}
			got <- ev
		}
	})
	defer unsubscribe()
	if err := m.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	ev := <-got
	if diff := cmp.Diff([]string{"a__x", "a__y"}, ev.Tools.Added); diff != "" || len(ev.Tools.Removed) != 0 {
		t.Errorf("added (-want +got):\n%s removed %v", diff, ev.Tools.Removed)
	}
}

func TestSubscriberPanicDoesNotAffectOthers(t *testing.T) {
	m := New(&config.Config{}, nil)
	var mu sync.Mutex
	var seen []string
	record := func(who string) func(Event) {
		return func(Event) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, who)
		}
	}
	m.Subscribe(record("first"))
	m.Subscribe(func(Event) { panic("listener bug") })
	m.Subscribe(record("third"))
	m.subs.send(Event{Kind: EventChanged})
	m.Close() // delivers what is queued
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(seen)
	if diff := cmp.Diff([]string{"first", "third"}, seen); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

func TestUnsubscribeFromListener(t *testing.T) {
	m := New(&config.Config{}, nil)
	calls := 0
	var unsubscribe func()
	unsubscribe = m.Subscribe(func(Event) {
		calls++
		unsubscribe()
	})
	m.subs.send(Event{Kind: EventChanged})
	m.subs.send(Event{Kind: EventChanged})
	m.Close()
	if calls != 1 {
		t.Errorf("listener called %d times after unsubscribing from itself, want 1", calls)
	}
}

func TestEventString(t *testing.T) {
	cause := &ServerError{Server: "web", Op: "session", Err: errors.New("connection lost")}
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{Kind: EventState, Server: "web", State: StateConnected}, "state web: connected"},
		{Event{Kind: EventState, Server: "web", State: StateReconnecting, Err: cause}, "state web: reconnecting; last error: session: connection lost"},
		{Event{Kind: EventChanged, Server: "web", Tools: Diff{Added: []string{"web__a"}, Removed: []string{"web__b"}}, Resources: Diff{Added: []string{"mem://x"}}},
			"changed web: tools +web__a -web__b resources +mem://x"},
		{Event{Kind: EventReloadFailed, Server: "web", List: "tools", Err: &ServerError{Server: "web", Op: "reload tools", Err: errors.New("boom")}},
			"reload-failed web: reload tools: boom"},
		{Event{Kind: EventResourceUpdated, Server: "web", URI: "mem://x"}, "resource-updated web: mem://x"},
	} {
		if got := tc.ev.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestLifecycleCallsReturnInStep: Connect, Disconnect, Reconnect and
// Reconfigure return only once every subscriber has been told of what they
// changed, however slow the subscriber: a host (the gateway among them)
// acts on their return without waiting for an event.
func TestLifecycleCallsReturnInStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("a", mcptest.Script{Tools: tools("x")})
		f.add("b", mcptest.Script{Tools: tools("y")})
		m := f.manager(server("a"))
		var mu sync.Mutex
		seen := map[string]bool{}    // the tools the subscriber was told of
		states := map[string]State{} // the last state it was told of, by server
		m.Subscribe(func(ev Event) {
			mcptest.PassTime(time.Second) // a slow subscriber, in fake time
			mu.Lock()
			defer mu.Unlock()
			if ev.Kind == EventState {
				states[ev.Server] = ev.State
			}
			for _, name := range ev.Tools.Added {
				seen[name] = true
			}
			for _, name := range ev.Tools.Removed {
				delete(seen, name)
			}
		})
		check := func(after string, want ...string) {
			t.Helper()
			mu.Lock()
			defer mu.Unlock()
			got := slices.Sorted(maps.Keys(seen))
			if !slices.Equal(got, want) {
				t.Errorf("after %s the subscriber knows %v, want %v", after, got, want)
			}
		}
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		check("Connect", "a__x")
		if err := m.Disconnect(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		check("Disconnect")
		if err := m.Reconnect(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		check("Reconnect", "a__x")
		if _, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{server("a"), server("b")}}); err != nil {
			t.Fatal(err)
		}
		// The server it adds starts: its tools may come later, but the
		// subscriber knows of it.
		mu.Lock()
		if _, ok := states["b"]; !ok {
			t.Error("after Reconfigure the subscriber knows nothing of the server it added")
		}
		mu.Unlock()
	})
}

// TestSubscriberThatCallsALifecycleMethod: a subscriber may not call the
// lifecycle methods, which wait for it; one that does delays them by
// Options.CloseTimeout at most, and the manager works on.
func TestSubscriberThatCallsALifecycleMethod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("a", mcptest.Script{Tools: tools("x")})
		m := f.managerWith(&Options{Cache: CacheOff, CloseTimeout: time.Second}, server("a"))
		disconnected := make(chan error, 1)
		var once sync.Once
		m.Subscribe(func(ev Event) {
			if ev.Kind == EventChanged {
				once.Do(func() { disconnected <- m.Disconnect(context.Background(), "a") })
			}
		})
		start := time.Now()
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := <-disconnected; err != nil {
			t.Fatalf("the subscriber's Disconnect = %v", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("Connect and the subscriber's Disconnect took %v, want each to give up on the other within the close timeout", took)
		}
		if err := m.Reconnect(t.Context(), "a"); err != nil {
			t.Fatalf("Reconnect after = %v", err)
		}
		if got := m.Status().Connected(); !slices.Equal(got, []string{"a"}) {
			t.Errorf("connected after Reconnect: %v", got)
		}
	})
}
