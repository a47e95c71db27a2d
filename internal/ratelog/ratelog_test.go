package ratelog

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// summaries records the summaries of a Log.
type summaries struct {
	mu   sync.Mutex
	seen []string
}

func (s *summaries) add(held int, first string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, fmt.Sprintf("%d from %s", held, first))
}

func (s *summaries) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.seen
	s.seen = nil
	return out
}

// TestLogLetsBurstThroughAndSummarizesTheRest: of a storm, burst lines a
// period pass, a summary included; the rest are counted in one summary at
// the end of the period, which shows the first of them; a period starts
// with the first line after the last ended.
func TestLogLetsBurstThroughAndSummarizesTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s summaries
		l := New(10*time.Second, 3, s.add)
		passed := 0
		for i := range 10 {
			if l.Allow(func() string { return fmt.Sprint("line ", i) }) {
				passed++
			}
		}
		if passed != 3 {
			t.Errorf("%d of 10 lines passed, want the burst, 3", passed)
		}
		mcptest.PassTime(10 * time.Second) // the period ends
		synctest.Wait()
		if got := s.take(); len(got) != 1 || got[0] != "7 from line 3" {
			t.Errorf("summaries %q, want one of the 7 held back, from line 3", got)
		}
		// The summary counts as a line of the next period.
		passed = 0
		for range 3 {
			if l.Allow(func() string { return "later" }) {
				passed++
			}
		}
		if passed != 2 {
			t.Errorf("after a summary, %d of 3 lines passed, want 2", passed)
		}
		l.Stop()
		mcptest.PassTime(time.Minute)
		synctest.Wait()
		if got := s.take(); len(got) != 0 {
			t.Errorf("summaries after Stop: %q, want none", got)
		}
		if l.Allow(func() string { return "after" }) {
			t.Error("a line passed after Stop")
		}
	})
}

// A log of a storm: the first line at once, the rest in one summary.
func Example() {
	l := New(time.Hour, 1, func(held int, first string) { fmt.Printf("%d more like %q\n", held, first) })
	for i := range 5 {
		if l.Allow(func() string { return fmt.Sprint("noise ", i) }) {
			fmt.Println("noise", i)
		}
	}
	l.Stop() // the summary would come in an hour
	// Output: noise 0
}
