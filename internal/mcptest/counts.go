package mcptest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Counts is what a server has seen. See [Server.Counts] and [ReadCounts].
type Counts struct {
	// Starts counts process starts for the command form, and answered
	// handshakes (initialize, or a server/discover that offered revision
	// 2026-07-28 or later) in process.
	Starts int
	// ListTools counts tools/list requests received; every page counts.
	ListTools int
	// Calls counts tools/call requests received, whatever became of them.
	Calls int
	// ByTool counts tools/call per tool name, when the tool starts to run
	// (after any CallDelay). It is nil when no tool has run.
	ByTool map[string]int
	// Cancelled counts tool runs that ended because their request was
	// cancelled (by notifications/cancelled, or the session closing).
	Cancelled int
	// Subscribes counts resources/subscribe requests received.
	Subscribes int
	// PIDs lists the process id of each recorded start, oldest first. Only
	// ReadCounts fills it in (so that tests can check that no server
	// process survived); it is nil from Server.Counts.
	PIDs []int
}

// counter holds a Server's counts. It is safe for concurrent use.
type counter struct {
	rec *recorder // nil unless events are recorded; set before first use

	mu     sync.Mutex
	counts Counts // guarded by mu
	incr   int    // the Increment counter, guarded by mu
}

func (c *counter) countStart() {
	c.mu.Lock()
	c.counts.Starts++
	c.mu.Unlock()
}

func (c *counter) countList() {
	c.mu.Lock()
	c.counts.ListTools++
	c.mu.Unlock()
	c.rec.record("list")
}

// countCall counts a tools/call on receipt and returns the count so far,
// including this one.
func (c *counter) countCall(name string) int {
	c.mu.Lock()
	c.counts.Calls++
	n := c.counts.Calls
	c.mu.Unlock()
	c.rec.record("call " + name)
	return n
}

func (c *counter) countRun(name string) {
	c.mu.Lock()
	if c.counts.ByTool == nil {
		c.counts.ByTool = make(map[string]int)
	}
	c.counts.ByTool[name]++
	c.mu.Unlock()
	c.rec.record("run " + name)
}

func (c *counter) countSubscribe() {
	c.mu.Lock()
	c.counts.Subscribes++
	c.mu.Unlock()
}

func (c *counter) countCancelled() {
	c.mu.Lock()
	c.counts.Cancelled++
	c.mu.Unlock()
}

func (c *counter) increment() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.incr++
	return c.incr
}

func (c *counter) snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	out.ByTool = maps.Clone(c.counts.ByTool)
	return out
}

// eventsFile is the name of the event log under a StateDir.
const eventsFile = "events.log"

// A recorder appends events, one line each, to the event log of a StateDir.
// Each event is a single write to a file opened with O_APPEND, so lines from
// several processes never interleave. A nil recorder records nothing.
type recorder struct {
	f *os.File
}

// openRecorder opens the event log under dir, creating both if needed.
func openRecorder(dir string) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mcptest: state dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, eventsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mcptest: state dir: %w", err)
	}
	return &recorder{f: f}, nil
}

// record appends one event. Errors are ignored: counting is best-effort and
// must never change how the server behaves.
func (r *recorder) record(event string) {
	if r == nil {
		return
	}
	_, _ = r.f.WriteString(event + "\n")
}

func (r *recorder) close() error {
	if r == nil {
		return nil
	}
	return r.f.Close()
}

// ReadCounts reads the events recorded under stateDir by command-form
// servers ([Script.StateDir]), possibly several processes over time, and
// totals them. A directory with no events gives zero Counts.
//
// The log holds one event per line: "start PID" when a process starts,
// "list" for each tools/list, "call NAME" when a tools/call arrives and
// "run NAME" when the tool starts to run.
func ReadCounts(stateDir string) (Counts, error) {
	var c Counts
	f, err := os.Open(filepath.Join(stateDir, eventsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("mcptest: read counts: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, arg, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "start":
			c.Starts++
			if pid, err := strconv.Atoi(arg); err == nil {
				c.PIDs = append(c.PIDs, pid)
			}
		case "list":
			c.ListTools++
		case "call":
			c.Calls++
		case "run":
			if c.ByTool == nil {
				c.ByTool = make(map[string]int)
			}
			c.ByTool[arg]++
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("mcptest: read counts: %w", err)
	}
	return c, nil
}
