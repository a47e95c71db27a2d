package upstream

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

func specs(names ...string) []mcptest.ToolSpec {
	var out []mcptest.ToolSpec
	for _, n := range names {
		out = append(out, mcptest.ToolSpec{Name: n})
	}
	return out
}

func sortedToolNames(u *Upstream) []string {
	names := toolNames(u.Snapshot().Tools)
	slices.Sort(names)
	return names
}

// failedLists returns the events of lists that could not be fetched, in
// order.
func (l *eventLog) failedLists() []Event {
	var out []Event
	for _, ev := range l.ofKind(EventList) {
		if ev.Err != nil {
			out = append(out, ev)
		}
	}
	return out
}

// events returns the events of one kind, in order.
func (l *eventLog) ofKind(k EventKind) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, ev := range l.events {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// settle lets the go-sdk's debounced change notifications (10 ms) go out and
// our own wait for quiet (reloadQuiet) pass, then waits for everything to come
// to rest.
func settle(t *testing.T) {
	t.Helper()
	mcptest.PassTime(10*time.Millisecond + 2*reloadQuiet)
	synctest.Wait()
}

// The scenarios of LiveKit's list_changed tests (seed-behaviours §3.4) that
// apply outside a voice session, and oh-my-pi's rules (§2.9).

func TestListChangedReloadsTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, &Options{OnEvent: log.add})
		srv.SetTools(specs("beta", "gamma"))
		settle(t)
		if diff := cmp.Diff([]string{"beta", "gamma"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools after list_changed (-want +got):\n%s", diff)
		}
		if got := srv.Counts().ListTools; got < 2 {
			t.Errorf("%d lists, want at least 2", got)
		}
		if evs := log.ofKind(EventList); len(evs) == 0 || evs[len(evs)-1].List != Tools {
			t.Errorf("list events = %v, want one for the tools", evs)
		}
	})
}

// TestUnchangedToolKeepsItsIdentity: a reload in which one tool changed
// keeps the definitions of the others, the same pointers, so that what
// follows the lists redoes only the tool that changed.
func TestUnchangedToolKeepsItsIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "a", Description: "A"}, {Name: "b", Description: "B"}}}, config.Server{}, nil)
		byName := func() map[string]*mcp.Tool {
			out := make(map[string]*mcp.Tool)
			for _, t := range u.Snapshot().Tools {
				out[t.Name] = t
			}
			return out
		}
		before := byName()
		srv.SetTools([]mcptest.ToolSpec{{Name: "a", Description: "A"}, {Name: "b", Description: "B, changed"}})
		settle(t)
		after := byName()
		if after["a"] != before["a"] {
			t.Error("the unchanged tool a got a new definition")
		}
		if after["b"] == before["b"] || after["b"].Description != "B, changed" {
			t.Errorf("the changed tool b = %+v, want its new definition", after["b"])
		}
	})
}

func TestNotificationDuringInitialListIsNotMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := inMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, nil)
		release := srv.BlockListTools()
		u.Start(nil)
		synctest.Wait() // the first list is held
		srv.SetTools(specs("beta"))
		settle(t) // the notification arrives while the list is held
		release()
		waitState(t, u, Connected)
		synctest.Wait()
		if diff := cmp.Diff([]string{"beta"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
	})
}

func TestNotificationDuringReloadKeepsTheListDirty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, nil)
		release := srv.BlockListTools()
		srv.SetTools(specs("beta"))
		settle(t) // the reload is held with "beta" on the server
		srv.SetTools(specs("gamma"))
		settle(t) // a second notification lands mid-fetch
		release()
		settle(t) // the held fetch ends behind, and one more follows
		if diff := cmp.Diff([]string{"gamma"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if got := srv.Counts().ListTools; got != 3 {
			t.Errorf("%d lists, want 3: the first, the held one, and one more", got)
		}
	})
}

func TestReloadRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, &Options{OnEvent: log.add})
		srv.FailListTools(2)
		start := time.Now()
		srv.SetTools(specs("beta"))
		mcptest.PassTime(time.Minute)
		synctest.Wait()
		if diff := cmp.Diff([]string{"beta"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		// The notification is debounced 10 ms; then attempts at 0, 1 and 3 s.
		lists := log.ofKind(EventList)
		if len(lists) == 0 {
			t.Fatal("no list event")
		}
		if took := lists[len(lists)-1].At.Sub(start).Round(time.Second); took != 3*time.Second {
			t.Errorf("the reload succeeded after %v, want 3s", took)
		}
		if got := srv.Counts().ListTools; got != 1+3 {
			t.Errorf("%d lists, want 1 + 3", got)
		}
		if evs := log.failedLists(); len(evs) != 0 {
			t.Errorf("reload-failed events %v, want none", evs)
		}
	})
}

func TestReloadGivesUpAndKeepsTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, &Options{OnEvent: log.add})
		srv.FailListTools(100)
		srv.SetTools(specs("beta"))
		mcptest.PassTime(time.Minute)
		synctest.Wait()
		if diff := cmp.Diff([]string{"alpha"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools after giving up (-want +got):\n%s", diff)
		}
		if got := srv.Counts().ListTools; got != 1+4 {
			t.Errorf("%d lists, want 1 + 4 attempts", got)
		}
		evs := log.failedLists()
		if len(evs) != 1 || evs[0].List != Tools || !strings.Contains(evs[0].Err.Error(), `server "mem": reload tools:`) {
			t.Errorf("reload-failed events = %v, want one naming the server", evs)
		}
		// A later notification tries again.
		srv.FailListTools(0)
		srv.NotifyToolsChanged()
		settle(t)
		if diff := cmp.Diff([]string{"beta"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools after a later notification (-want +got):\n%s", diff)
		}
	})
}

func TestNotificationStormCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, nil)
		srv.SetTools(specs("omega")) // debounced: its notification comes later
		for range 1000 {
			srv.NotifyToolsChanged()
		}
		settle(t)
		if got := srv.Counts().ListTools - 1; got > 3 {
			t.Errorf("1000 notifications caused %d fetches, want at most 3", got)
		}
		if diff := cmp.Diff([]string{"omega"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools after the storm (-want +got):\n%s", diff)
		}
	})
}

// A storm spread over time, as a real one is, still costs few fetches: the
// owner waits for quiet, but not for ever.
func TestSlowStormCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, nil)
		for i := range 1000 {
			if i == 500 {
				srv.SetTools(specs("omega"))
			}
			srv.NotifyToolsChanged()
			mcptest.PassTime(time.Millisecond)
		}
		settle(t)
		if got := srv.Counts().ListTools - 1; got > 3 {
			t.Errorf("1000 notifications over a second caused %d fetches, want at most 3", got)
		}
		if diff := cmp.Diff([]string{"omega"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools after the storm (-want +got):\n%s", diff)
		}
	})
}

// An endless storm does not starve the list: it is fetched at least every
// reloadMaxWait.
func TestEndlessStormStillFetches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, nil)
		srv.SetTools(specs("omega"))
		for range 3 * reloadMaxWait / (10 * time.Millisecond) {
			srv.NotifyToolsChanged()
			mcptest.PassTime(10 * time.Millisecond)
		}
		if diff := cmp.Diff([]string{"omega"}, sortedToolNames(u)); diff != "" {
			t.Errorf("tools during the storm (-want +got):\n%s", diff)
		}
		if got := srv.Counts().ListTools - 1; got < 2 || got > 4 {
			t.Errorf("%d fetches in a 3 s storm, want about one a second", got)
		}
	})
}

func TestNoReloadAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, mcptest.Script{Tools: specs("alpha")}, config.Server{}, nil)
		u.Close(time.Time{})
		u.lists.listChanged(Tools) // as a notification racing the close would
		synctest.Wait()
		if got := srv.Counts().ListTools; got != 1 {
			t.Errorf("%d lists, want none after close", got)
		}
	})
}

func TestListTTLIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, srv := connectedInMemory(t, mcptest.Script{ListTTL: 1500 * time.Millisecond}, config.Server{}, nil)
		mcptest.PassTime(1400 * time.Millisecond)
		if got := srv.Counts().ListTools; got != 1 {
			t.Errorf("%d lists before the hint ran out, want 1", got)
		}
		mcptest.PassTime(200 * time.Millisecond)
		synctest.Wait()
		if got := srv.Counts().ListTools; got != 2 {
			t.Errorf("%d lists after the hint ran out, want 2", got)
		}
	})
}

func TestPromptsResourcesAndTemplates(t *testing.T) {
	script := mcptest.Script{
		Prompts:   []mcptest.PromptSpec{{Name: "greet", Arguments: []string{"who"}}},
		Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a", Text: "alpha"}},
		Templates: []mcptest.TemplateSpec{{URITemplate: "mem://t/{id}", Name: "t"}},
	}
	synctest.Test(t, func(t *testing.T) {
		u, srv := connectedInMemory(t, script, config.Server{}, nil)
		synctest.Wait()
		snap := u.Snapshot()
		if len(snap.Prompts) != 1 || len(snap.Resources) != 1 || len(snap.Templates) != 1 {
			t.Fatalf("prompts %d, resources %d, templates %d; want 1 each", len(snap.Prompts), len(snap.Resources), len(snap.Templates))
		}
		pr, err := u.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
		if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "PROMPT greet who=Ada" {
			t.Errorf("GetPrompt = %v, %v", pr, err)
		}
		rr, err := u.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://a"})
		if err != nil || rr.Contents[0].Text != "alpha" {
			t.Errorf("ReadResource = %v, %v", rr, err)
		}
		srv.SetPrompts([]mcptest.PromptSpec{{Name: "greet"}, {Name: "bye"}})
		srv.SetResources([]mcptest.ResourceSpec{{URI: "mem://b", Name: "b"}})
		settle(t)
		snap = u.Snapshot()
		if len(snap.Prompts) != 2 || len(snap.Resources) != 1 || snap.Resources[0].URI != "mem://b" {
			t.Errorf("after list_changed: prompts %v, resources %v", snap.Prompts, snap.Resources)
		}
	})
}

func TestTemplatesErrors(t *testing.T) {
	for _, tc := range []struct {
		code      int64
		wantKnown bool
	}{{jsonrpc.CodeMethodNotFound, true}, {jsonrpc.CodeInternalError, false}} {
		synctest.Test(t, func(t *testing.T) {
			script := mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}}, TemplatesError: tc.code}
			u, _ := connectedInMemory(t, script, config.Server{}, nil)
			synctest.Wait()
			ls := u.lists.view()
			templates, resources := ls.templates, ls.resources
			if len(resources) != 1 {
				t.Errorf("code %d: %d resources, want them kept", tc.code, len(resources))
			}
			if known := templates != nil; known != tc.wantKnown && tc.wantKnown {
				t.Errorf("code %d: templates %v, want an empty list cached", tc.code, templates)
			}
			if !tc.wantKnown && templates != nil {
				t.Errorf("code %d: templates %v, want nothing cached", tc.code, templates)
			}
		})
	}
}

func TestResourceSubscriptions(t *testing.T) {
	script := mcptest.Script{Resources: []mcptest.ResourceSpec{{URI: "mem://a", Name: "a"}, {URI: "mem://b", Name: "b"}}}
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		sw := newSwitchable(t, script)
		u := New(config.Server{Name: "sw", Command: "in-memory"}, &Options{Dial: sw.dial, OnEvent: log.add, Rand: func() float64 { return 0.5 }})
		defer u.Close(time.Time{})
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := u.Subscribe(t.Context(), "mem://a"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"mem://a"}, sw.srv.Subscriptions()); diff != "" {
			t.Errorf("server subscriptions (-want +got):\n%s", diff)
		}
		sw.srv.NotifyResourceUpdated("mem://a")
		sw.srv.NotifyResourceUpdated("mem://b") // not subscribed: ignored
		synctest.Wait()
		evs := log.ofKind(EventResourceUpdated)
		if len(evs) != 1 || evs[0].URI != "mem://a" {
			t.Errorf("updates = %v, want mem://a only", evs)
		}
		// A new session is subscribed again.
		sw.srv.Restart()
		synctest.Wait()
		mcptest.PassTime(refreshDelay)
		synctest.Wait()
		if diff := cmp.Diff([]string{"mem://a"}, sw.srv.Subscriptions()); diff != "" {
			t.Errorf("server subscriptions after a reconnect (-want +got):\n%s", diff)
		}
		if err := u.Unsubscribe(t.Context(), "mem://a"); err != nil {
			t.Fatal(err)
		}
		if got := sw.srv.Subscriptions(); len(got) != 0 {
			t.Errorf("server subscriptions after unsubscribe = %v", got)
		}
	})
}

func TestSubscribeUnsupported(t *testing.T) {
	u, _ := connectedInMemory(t, mcptest.Script{}, config.Server{}, nil)
	if err := u.Subscribe(t.Context(), "mem://x"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Subscribe to a server without resources = %v, want ErrNotSupported", err)
	}
}

// TestListEventsCarryTheirList: the snapshot of an EventList holds the list
// it announces, whoever changed it (Seed, the first session, a reload after
// list_changed): whoever hears the event needs nothing else. The list set
// publishes through the supervisor after releasing its own lock, so that
// the two locks are taken in one order only; the change must still come
// first.
func TestListEventsCarryTheirList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		u, srv := inMemory(t, mcptest.Script{Tools: specs("alpha"), Prompts: []mcptest.PromptSpec{{Name: "greet"}}}, config.Server{}, &Options{OnEvent: log.add})
		u.Seed([]*mcp.Tool{{Name: "cached"}}, nil, "")
		if err := u.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		settle(t)
		srv.SetTools(specs("beta"))
		srv.SetPrompts([]mcptest.PromptSpec{{Name: "bye"}})
		settle(t)
		var tools, prompts []string
		for _, ev := range log.ofKind(EventList) {
			switch ev.List {
			case Tools:
				tools = append(tools, strings.Join(toolNames(ev.Snapshot.Tools), ","))
			case Prompts:
				var names []string
				for _, p := range ev.Snapshot.Prompts {
					names = append(names, p.Name)
				}
				prompts = append(prompts, strings.Join(names, ","))
			}
		}
		if diff := cmp.Diff([]string{"cached", "alpha", "beta"}, tools); diff != "" {
			t.Errorf("the tools of each tools event (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"greet", "bye"}, prompts); diff != "" {
			t.Errorf("the prompts of each prompts event (-want +got):\n%s", diff)
		}
	})
}
