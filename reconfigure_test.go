package switchboard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestReconfigureAppliesTheDiff: a new config adds, removes and changes
// only what it names; an untouched server keeps its session and its call
// in flight; a broken entry keeps the running server; subscribers hear of
// the changed names once.
func TestReconfigureAppliesTheDiff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		for _, name := range []string{"a", "b", "c", "d"} {
			f.add(name, mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo"}, {Name: "nap", Behavior: mcptest.Sleep}}})
		}
		m := f.manager(server("a"), server("b"), server("c"))
		var mu sync.Mutex
		var added, removed []string
		m.Subscribe(func(ev Event) {
			if ev.Kind == EventChanged {
				mu.Lock()
				added = append(added, ev.Tools.Added...)
				removed = append(removed, ev.Tools.Removed...)
				mu.Unlock()
			}
		})
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		added, removed = nil, nil
		mu.Unlock()

		// A call in flight to a, which the change leaves alone.
		napped := make(chan error, 1)
		go func() {
			_, err := m.CallTool(t.Context(), nil, &mcp.CallToolParams{Name: "a__nap", Arguments: map[string]any{"ms": 5000}})
			napped <- err
		}()
		synctest.Wait()

		renamed := server("b")
		bee := "bee"
		renamed.Prefix = &bee
		broken := server("e")
		broken.URL = "http://x" // a stdio server with a URL: rejected
		r, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{server("a"), renamed, server("d"), broken}})
		if err != nil {
			t.Fatal(err)
		}
		want := Reconfiguration{Added: []string{"d"}, Removed: []string{"c"}, Changed: []string{"b"}, Rejected: r.Rejected}
		if len(r.Rejected) != 1 || r.Rejected[0].Name != "e" {
			t.Errorf("rejected %+v, want e", r.Rejected)
		}
		if diff := cmp.Diff(want, r, cmpopts.EquateEmpty(), cmpopts.EquateErrors()); diff != "" {
			t.Errorf("reconfiguration (-want +got):\n%s", diff)
		}
		synctest.Wait()
		if err := <-napped; err != nil {
			t.Errorf("the call in flight to a: %v", err)
		}
		for name, want := range map[string]int{"a": 1, "b": 1, "c": 1, "d": 1} {
			if got := f.dialed(name); got != want {
				t.Errorf("%s dialed %d times, want %d", name, got, want)
			}
		}
		if n := f.servers["c"].OpenSessions(); n != 0 {
			t.Errorf("the removed server has %d sessions open", n)
		}
		states := map[string]State{}
		for _, s := range m.Status() {
			states[s.Name] = s.State
		}
		if diff := cmp.Diff(map[string]State{"a": StateConnected, "b": StateConnected, "d": StateConnected, "e": StateFailed}, states); diff != "" {
			t.Errorf("states (-want +got):\n%s", diff)
		}
		var names []string
		for _, tool := range m.Tools(t.Context(), nil) {
			names = append(names, tool.Name)
		}
		if diff := cmp.Diff([]string{"a__echo", "a__nap", "bee__echo", "bee__nap", "d__echo", "d__nap"}, names); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		mu.Lock()
		slices.Sort(added)
		slices.Sort(removed)
		if diff := cmp.Diff([]string{"bee__echo", "bee__nap", "d__echo", "d__nap"}, added); diff != "" {
			t.Errorf("tools added in events (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"b__echo", "b__nap", "c__echo", "c__nap"}, removed); diff != "" {
			t.Errorf("tools removed in events (-want +got):\n%s", diff)
		}
		mu.Unlock()

		// A broken edit of a running server keeps it running as it was.
		brokenA := server("a")
		brokenA.URL = "http://x"
		r, err = m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{brokenA, renamed, server("d")}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kept) != 1 || r.Kept[0].Name != "a" || r.Kept[0].Err == nil || len(r.Added)+len(r.Removed)+len(r.Changed) != 0 {
			t.Errorf("a broken edit of a: %+v, want a kept, nothing else", r)
		}
		synctest.Wait()
		if st := m.Status()[0]; st.Name != "a" || st.State != StateConnected || f.dialed("a") != 1 {
			t.Errorf("a after a broken edit: %s %v, dialed %d times", st.Name, st.State, f.dialed("a"))
		}
	})
}

// TestNoProcessPerSessionAfterTheServerEnds: a request that found a
// processPerSession server before the host disconnected it, or removed it
// by a reload, starts no process of its own once that is done: it gets the
// shared upstream, which says it is unavailable. A process started then
// would outlive every later reload, reconnect and disconnect.
func TestNoProcessPerSessionAfterTheServerEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "echo"}}})
		entry := server("s")
		entry.ProcessPerSession = true
		m := f.manager(entry)
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx := WithPeer(t.Context(), &endingPeer{done: make(chan struct{})})
		stale := m.view.Load().byName["s"]
		startsNone := func(step string) {
			t.Helper()
			got, err := m.serverFor(ctx, stale)
			if err != nil || got != stale {
				t.Errorf("%s: serverFor = %p, %v; want the shared upstream %p", step, got, err, stale)
			}
			synctest.Wait()
			if n, open := len(m.perSession.ofServer("s")), srv.OpenSessions(); n != 0 || open != 0 {
				t.Errorf("%s: %d processes per session, %d sessions open; want none", step, n, open)
			}
		}
		if err := m.Disconnect(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		startsNone("disconnected")
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Reconfigure(t.Context(), &config.Config{}); err != nil {
			t.Fatal(err)
		}
		startsNone("removed")
	})
}

// endingPeer is a peer whose session can end, with no roots to offer.
type endingPeer struct {
	Peer // nil: the other methods are not called
	done chan struct{}
}

func (p *endingPeer) Session() any          { return p }
func (p *endingPeer) Done() <-chan struct{} { return p.done }

//lint:ignore SA1019 a peer offers roots while clients and servers use them.
func (*endingPeer) ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return nil, errors.New("no roots")
}

// TestCloseEndsReconfiguresWait: a Reconfigure that waits for a slow
// subscriber to take its events stops waiting when Close begins, as every
// lifecycle method does, instead of holding Close up for CloseTimeout.
func TestCloseEndsReconfiguresWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		f.add("a", mcptest.Script{})
		f.add("b", mcptest.Script{})
		m := f.managerWith(&Options{CloseTimeout: time.Hour}, server("a"))
		if err := m.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		var once sync.Once
		m.Subscribe(func(ev Event) {
			if ev.Server == "b" {
				once.Do(func() { <-gate }) // slow to take b's first event
			}
		})
		reconfigured := make(chan error, 1)
		go func() {
			_, err := m.Reconfigure(t.Context(), &config.Config{Servers: []config.Server{server("a"), server("b")}})
			reconfigured <- err
		}()
		synctest.Wait() // Reconfigure waits for the subscriber
		closed := make(chan error, 1)
		go func() { closed <- m.Close() }()
		synctest.Wait()
		select {
		case <-reconfigured:
		default:
			t.Error("Reconfigure still waits for its subscriber after Close began")
		}
		close(gate)
		if err := <-closed; err != nil {
			t.Errorf("Close = %v", err)
		}
	})
}
