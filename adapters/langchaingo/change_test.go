package lcgtools_test

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/tools"

	"github.com/switchboard-mcp/switchboard"
	lcgtools "github.com/switchboard-mcp/switchboard/adapters/langchaingo"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestServerCrashesMidSession: a server that crashes while a run calls it.
// A read-only call is replayed on a new session; one that may have run and
// is not idempotent reaches the model as the manager's "may or may not
// have run", and the run goes on; a server that does not come back reaches
// it as unavailable, not to be retried. The executor never ends the run.
func TestServerCrashesMidSession(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tool      string
		down      bool     // the server cannot be dialed again
		want      []string // prefixes of the observations: the call, then s__echo
		wantCalls int      // tools/call the server received
	}{
		{"read-only call replayed", "s__echo", false, []string{`{"n":1}`, `{"n":1}`}, 3},
		{"non-idempotent call not replayed", "s__increment", false,
			[]string{"Tool s__increment may or may not have run: ", `{"n":1}`}, 2},
		{"server gone", "s__increment", true,
			[]string{"Tool s__increment may or may not have run: ", "The server of tool s__echo is unavailable: "}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t)
				srv := f.add("s", mcptest.Script{CrashAfterCall: 1})
				m := f.manager(nil)
				ctx := t.Context()
				f.setDown("s", tc.down)
				model := newModel(act(tc.tool, `{"n": 1}`), act("s__echo", `{"n": 1}`), final("done"))
				got := observations(run(ctx, t, agents.NewOneShotAgent(model, lcgtools.Tools(ctx, m, nil))))
				if len(got) != len(tc.want) {
					t.Fatalf("observations %q, want %d", got, len(tc.want))
				}
				for i := range tc.want {
					if !strings.HasPrefix(got[i], tc.want[i]) {
						t.Errorf("observation %d = %q, want it to start with %q", i, got[i], tc.want[i])
					}
				}
				if tc.down && !strings.Contains(got[1], "Do not retry this tool") {
					t.Errorf("observation of the gone server = %q, want the manager's advice not to retry", got[1])
				}
				if c := srv.Counts(); c.Calls != tc.wantCalls {
					t.Errorf("the server received %d calls, want %d", c.Calls, tc.wantCalls)
				}
			})
		})
	}
}

// TestToolsChange: a server's tools change during a session. The next
// Tools and Definitions show the change, an agent made from them offers the
// new tool to the model, and a tool kept from the old set answers, as the
// manager does, that it is gone.
func TestToolsChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		srv := f.add("s", mcptest.Script{Tools: []mcptest.ToolSpec{{Name: "old", Description: "The old tool."}}})
		m := f.manager(nil)
		ctx := t.Context()
		before := lcgtools.Tools(ctx, m, nil)

		changed := mcptest.Await(m.Subscribe, func(ev switchboard.Event) bool {
			return ev.Kind == switchboard.EventChanged && slices.Contains(ev.Tools.Added, "s__new")
		})
		srv.SetTools([]mcptest.ToolSpec{{Name: "new", Description: "The new tool."}})
		mcptest.PassTime(time.Second) // past go-sdk's debounce of list_changed
		synctest.Wait()
		select {
		case <-changed:
		default:
			t.Fatal("no change event after the server's tools changed")
		}

		after := lcgtools.Tools(ctx, m, nil)
		if diff := cmp.Diff([]string{"s__new"}, toolNames(after)); diff != "" {
			t.Errorf("tools after the change (-want +got):\n%s", diff)
		}
		defs := lcgtools.Definitions(ctx, m, nil)
		if len(defs) != 1 || defs[0].Function.Name != "s__new" || defs[0].Function.Description != "The new tool." {
			t.Errorf("definitions after the change = %+v, want s__new alone", defs)
		}

		// The agent of the last turn still holds s__old.
		model := newModel(act("s__old", `{}`), final("gone"))
		got := observations(run(ctx, t, agents.NewOneShotAgent(model, before)))
		if len(got) != 1 || !strings.HasPrefix(got[0], "There is no tool named s__old") {
			t.Errorf("observation of a removed tool = %q, want the manager's unknown-tool text", got)
		}

		// The next turn's agent offers s__new, and it runs.
		model = newModel(act("s__new", `{"k": "v"}`), final("done"))
		got = observations(run(ctx, t, agents.NewOneShotAgent(model, after)))
		if diff := cmp.Diff([]string{`{"k":"v"}`}, got); diff != "" {
			t.Errorf("observations of the new tool (-want +got):\n%s", diff)
		}
		if p := model.prompt(0); !strings.Contains(p, "- s__new: The new tool.") || strings.Contains(p, "s__old") {
			t.Errorf("the next turn's prompt does not offer s__new alone:\n%s", p)
		}
	})
}

func toolNames(ts []tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}
