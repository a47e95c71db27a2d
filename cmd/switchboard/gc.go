package main

import (
	"log/slog"
	"runtime/debug"
)

// gatewayGCPercent is the garbage collector's target for serve, unless the
// user set GOGC or GOMEMLIMIT. A gateway's live heap is small (1 to 2 MB
// for a few servers) and its garbage plentiful (every message decoded and
// encoded twice on its way through), so at the default of 100 the
// collector ran some 150 times a second under load and took a third of the
// gateway's CPU. At 400 the heap may grow to five times the live heap
// before a collection, rather than twice: about 20 MB more under load, for
// a third fewer CPU cycles per call (BENCHMARKS.md).
const gatewayGCPercent = 400

// tuneGC sets the collector's target for a gateway, unless the environment
// (looked up with lookupEnv) sets GOGC or GOMEMLIMIT, which then rule.
func tuneGC(lookupEnv func(string) (string, bool), logger *slog.Logger) {
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := lookupEnv(name); ok && v != "" {
			logger.Debug("garbage collector left as the environment sets it", name, v)
			return
		}
	}
	debug.SetGCPercent(gatewayGCPercent)
}
