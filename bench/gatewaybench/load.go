package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clients are the load generator's sessions to one endpoint.
type clients struct {
	tool     string
	sessions []*mcp.ClientSession
}

// connectClients opens n sessions to endpoint and waits, up to ready, until
// tool is listed.
func connectClients(ctx context.Context, endpoint, tool string, n int, ready time.Duration) (*clients, error) {
	ctx, cancel := context.WithTimeout(ctx, ready)
	defer cancel()
	hc := &http.Client{Transport: deepPool()}
	c := &clients{tool: tool}
	for {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
		if err == nil {
			if res, lerr := cs.ListTools(ctx, nil); lerr == nil && slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == tool }) {
				c.sessions = append(c.sessions, cs)
				break
			}
			cs.Close()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: tool %q not listed within %v (last error: %v)", endpoint, tool, ready, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for len(c.sessions) < n {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("%s: session %d: %w", endpoint, len(c.sessions), err)
		}
		c.sessions = append(c.sessions, cs)
	}
	return c, nil
}

func (c *clients) close() {
	for _, cs := range c.sessions {
		cs.Close()
	}
}

// payload is session i's text for its call k: 1 KiB that names both, so a
// reply that went to the wrong caller, or is stale, does not match.
func payload(i, k int) string {
	head := fmt.Sprintf("session %04d call %09d ", i, k)
	return head + strings.Repeat("x", 1024-len(head))
}

// call makes session i's call k and checks the reply.
func (c *clients) call(ctx context.Context, i, k int) error {
	want := payload(i, k)
	res, err := c.sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"text": want}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("session %d call %d: unexpected result %+v", i, k, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != want {
		return fmt.Errorf("session %d call %d: the reply is not the text sent", i, k)
	}
	return nil
}

// loadResult is what one load phase measured.
type loadResult struct {
	calls     int
	elapsed   time.Duration
	latencies []time.Duration // sorted
	errs      int
	firstErr  error
}

func (r *loadResult) perSecond() float64 { return float64(r.calls) / r.elapsed.Seconds() }

// quantile returns the q quantile of the latencies (nearest rank).
func (r *loadResult) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(q*float64(len(r.latencies)) + 0.5)
	return r.latencies[min(max(i-1, 0), len(r.latencies)-1)]
}

// closedLoop has every session call back to back: after warmup, for d.
func (c *clients) closedLoop(ctx context.Context, warmup, d time.Duration) *loadResult {
	return c.run(ctx, warmup, d, nil)
}

// fixedRate spreads rate calls a second over the sessions, each timed from
// when it was due, so that a call queued behind a slow one counts its wait
// (no coordinated omission): after warmup, for d.
func (c *clients) fixedRate(ctx context.Context, rate float64, warmup, d time.Duration) *loadResult {
	due := make(chan time.Time, 4096)
	go func() {
		defer close(due)
		interval := time.Duration(float64(time.Second) / rate)
		next := time.Now()
		end := next.Add(warmup + d)
		for next.Before(end) {
			if wait := time.Until(next); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			select {
			case due <- next:
			case <-ctx.Done():
				return
			}
			next = next.Add(interval)
		}
	}()
	return c.run(ctx, warmup, d, due)
}

// run has every session call until the phase ends: back to back, or, with
// due, once per due time it takes.
func (c *clients) run(ctx context.Context, warmup, d time.Duration, due <-chan time.Time) *loadResult {
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+d)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		result   = &loadResult{elapsed: d}
		failures atomic.Int64
	)
	for i := range c.sessions {
		wg.Go(func() {
			var lat []time.Duration
			var firstErr error
			errs := 0
			for k := 0; ; k++ {
				began := time.Now()
				if due != nil {
					t, ok := <-due
					if !ok {
						break
					}
					began = t
				} else if !began.Before(end) {
					break
				}
				err := c.call(ctx, i, k)
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					if failures.Add(1) > 100 || ctx.Err() != nil {
						break
					}
					continue
				}
				if !began.Before(measureFrom) && began.Before(end) {
					lat = append(lat, time.Since(began))
				}
			}
			mu.Lock()
			result.latencies = append(result.latencies, lat...)
			result.errs += errs
			if result.firstErr == nil {
				result.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	result.calls = len(result.latencies)
	slices.Sort(result.latencies)
	if result.errs > 0 && result.firstErr == nil {
		result.firstErr = errors.New("calls failed")
	}
	return result
}
