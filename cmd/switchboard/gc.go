package main

import (
	"errors"
	"log/slog"
	"math"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/switchboard-mcp/switchboard/internal/gctune"
)

// memoryLimitRatio is the share of the container's memory limit that serve
// sets as its soft limit (GOMEMLIMIT), leaving room for what the Go runtime
// does not count (the binary's text, C and kernel buffers).
const memoryLimitRatio = 0.9

// tuneServeGC sets serve's memory settings from the environment, the
// process's cgroup and its live heap (see tuneGC).
func tuneServeGC(logger *slog.Logger) (stop func()) {
	return tuneGC(os.LookupEnv, containerLimit(memlimit.FromCgroup, logger), gctune.LiveHeap, logger)
}

// tuneGC sets serve's memory settings, unless the environment (looked up
// with lookupEnv) sets its own:
//
//   - a soft memory limit, memoryLimitRatio of the memory limit that limit
//     reports (the container's: see containerLimit), if there is one,
//     unless GOMEMLIMIT is set (AUTOMEMLIMIT=R sets another ratio,
//     AUTOMEMLIMIT=off none: see automemlimit);
//   - the collector's target, adapted to the live heap (as live reports
//     it) after every collection (see gctune), unless GOGC or GOMEMLIMIT
//     is set.
//
// stop ends the adapting; the settings stay.
func tuneGC(lookupEnv func(string) (string, bool), limit memlimit.Provider, live func() uint64, logger *slog.Logger) (stop func()) {
	if v, ok := lookupEnv("GOMEMLIMIT"); ok && v != "" {
		logger.Debug("memory limit and garbage collector left as the environment sets them", "GOMEMLIMIT", v)
		return func() {}
	}
	if n, err := memlimit.Set(memlimit.WithProvider(limit), memlimit.WithRatio(memoryLimitRatio)); err != nil {
		logger.Warn("memory limit not set", "error", err)
	} else if n < math.MaxInt64 {
		logger.Debug("memory limit set from the container's", "GOMEMLIMIT", n)
	}
	if v, ok := lookupEnv("GOGC"); ok && v != "" {
		logger.Debug("garbage collector left as the environment sets it", "GOGC", v)
		return func() {}
	}
	return gctune.Start(live, nil)
}

// containerLimit is the memory limit that from (memlimit.FromCgroup: the
// process's cgroup's) reports. No limit, or no cgroup to read one from
// (another OS, a cgroup without a memory controller), is
// memlimit.ErrNoLimit: nothing to set.
func containerLimit(from memlimit.Provider, logger *slog.Logger) memlimit.Provider {
	return func() (uint64, error) {
		n, err := from()
		if err != nil && !errors.Is(err, memlimit.ErrNoLimit) {
			logger.Debug("no container memory limit found", "error", err)
			return 0, memlimit.ErrNoLimit
		}
		return n, err
	}
}
