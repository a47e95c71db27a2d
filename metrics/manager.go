package metrics

// This file is the metrics' one coupling to the manager: the observer that
// hears of calls, and the subscription that follows its servers, their
// states and lists, and their tools. The rest of the package knows only
// the manager's value types.

import (
	"context"

	"github.com/switchboard-mcp/switchboard"
)

// Observer returns the manager observer that times and counts calls: give
// it to [switchboard.New] in Options.Observer.
func (x *Metrics) Observer() *switchboard.Observer {
	return &switchboard.Observer{
		CallStarted: func(server, _ string) { x.observe(server, func() { x.inFlight.WithLabelValues(server).Inc() }) },
		CallEnded: func(end switchboard.CallEnd) {
			x.observe(end.Server, func() {
				x.inFlight.WithLabelValues(end.Server).Dec()
				x.calls.WithLabelValues(end.Server, end.Tool, end.Outcome.String()).Inc()
				x.duration.WithLabelValues(end.Server).Observe(end.Duration.Seconds())
			})
		},
	}
}

// Follow starts from m's current state and follows its events, until stop:
// its servers (a reconfiguration adds and removes them), their states,
// reconnects, failed attempts and list fetches, and the tools they expose.
// Called before the manager's first subscriber, it hears of the events
// that came before it too (see [switchboard.Manager.Subscribe]). A scrape
// reads the counts of skipped stdout lines, and of tools held and not as
// pinned, from m's status. Follow one
// manager at a time.
func (x *Metrics) Follow(m *switchboard.Manager) (stop func()) {
	statusOf := func() []switchboard.ServerStatus { return m.Status() }
	x.fromStatus.status.Store(&statusOf)
	status := m.Status()
	x.follow(status)
	x.countTools(status, m.Tools(context.Background(), nil))
	unsubscribe := m.Subscribe(func(ev switchboard.Event) {
		status := m.Status()
		x.follow(status)
		switch ev.Kind {
		case switchboard.EventState:
			x.observe(ev.Server, func() {
				x.setState(ev.Server, ev.State)
				if ev.Reconnected {
					x.reconnects.WithLabelValues(ev.Server).Inc()
				}
			})
		case switchboard.EventAttemptFailed:
			x.observe(ev.Server, func() { x.connectFailures.WithLabelValues(ev.Server).Inc() })
		case switchboard.EventListed:
			x.observe(ev.Server, func() { x.refreshes.WithLabelValues(ev.Server, ev.List, "ok").Inc() })
		case switchboard.EventReloadFailed:
			x.observe(ev.Server, func() { x.refreshes.WithLabelValues(ev.Server, ev.List, "error").Inc() })
		case switchboard.EventChanged:
			x.countTools(status, m.Tools(context.Background(), nil))
		}
	})
	return func() {
		unsubscribe()
		x.fromStatus.status.CompareAndSwap(&statusOf, nil)
	}
}
