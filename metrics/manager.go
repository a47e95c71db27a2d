package metrics

// This file is the metrics' one coupling to the manager: the observer that
// hears of calls and state changes, and the subscription that follows its
// servers and their tools. The rest of the package knows only the
// manager's value types.

import (
	"context"

	"github.com/switchboard-mcp/switchboard"
)

// Observer returns the manager observer that feeds the metrics: give it to
// [switchboard.New] in Options.Observer.
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
		StateChanged: func(server string, _, to switchboard.State, _ error) {
			x.observe(server, func() { x.setState(server, to) })
		},
		Reconnected: func(server string) { x.observe(server, func() { x.reconnects.WithLabelValues(server).Inc() }) },
		ConnectFailed: func(server string, _ error) {
			x.observe(server, func() { x.connectFailures.WithLabelValues(server).Inc() })
		},
		ListRefreshed: func(server, kind string, err error) {
			outcome := "ok"
			if err != nil {
				outcome = "error"
			}
			x.observe(server, func() { x.refreshes.WithLabelValues(server, kind, outcome).Inc() })
		},
		SkippedLine: func(server string) { x.observe(server, func() { x.skippedLines.WithLabelValues(server).Inc() }) },
	}
}

// Follow starts from m's current state and follows its changes of exposed
// tools and of servers (a reconfiguration adds and removes them), until
// stop. Give the metrics' Observer to m before: Follow covers what happened
// before it, the observer what happens after.
func (x *Metrics) Follow(m *switchboard.Manager) (stop func()) {
	x.follow(m.Status())
	x.countTools(m.Status(), m.Tools(context.Background(), nil))
	return m.Subscribe(func(ev switchboard.Event) {
		x.follow(m.Status())
		if ev.Kind == switchboard.EventChanged {
			x.countTools(m.Status(), m.Tools(context.Background(), nil))
		}
	})
}
