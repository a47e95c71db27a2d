package main

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/switchboard-mcp/switchboard/internal/gctune"
)

// TestTuneGC: serve sets a soft memory limit of 90% of the container's,
// if it has one, unless GOMEMLIMIT is set; and adapts the collector's
// target to the live heap, unless GOGC or GOMEMLIMIT is set.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	// automemlimit reads the environment itself: it must not hold the
	// test's own.
	for _, name := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	const gib = 1 << 30
	cgroup := func(limit uint64) memlimit.Provider { return memlimit.Limit(limit) }
	noLimit := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	noCgroups := func() (uint64, error) { return 0, memlimit.ErrCgroupsNotSupported }
	for _, tc := range []struct {
		name      string
		env       map[string]string
		limit     memlimit.Provider
		wantLimit int64
		wantGOGC  int
	}{
		{"a container's limit", nil, cgroup(gib), gib * 9 / 10, gctune.MaxPercent},
		{"no limit", nil, noLimit, math.MaxInt64, gctune.MaxPercent},
		{"no cgroups", nil, noCgroups, math.MaxInt64, gctune.MaxPercent},
		{"GOGC empty", map[string]string{"GOGC": ""}, cgroup(gib), gib * 9 / 10, gctune.MaxPercent},
		{"GOGC set", map[string]string{"GOGC": "50"}, cgroup(gib), gib * 9 / 10, 100},
		{"GOMEMLIMIT empty", map[string]string{"GOMEMLIMIT": ""}, cgroup(gib), gib * 9 / 10, gctune.MaxPercent},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, cgroup(gib), math.MaxInt64, 100},
		{"GOMEMLIMIT and GOGC set", map[string]string{"GOMEMLIMIT": "off", "GOGC": "50"}, cgroup(gib), math.MaxInt64, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			var log bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&log, nil))
			stop := tuneGC(func(name string) (string, bool) { v, ok := tc.env[name]; return v, ok },
				containerLimit(tc.limit, logger), func() uint64 { return 1 << 20 }, logger)
			stop()
			if got := debug.SetGCPercent(100); got != tc.wantGOGC {
				t.Errorf("GOGC %d, want %d", got, tc.wantGOGC)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
			if strings.Contains(log.String(), "level=WARN") || strings.Contains(log.String(), "level=ERROR") {
				t.Errorf("it logged a problem:\n%s", log.String())
			}
		})
	}
}

// TestContainerLimitIsQuietWithoutCgroups: where no cgroup tells a limit,
// there is none to set, and nothing to warn about.
func TestContainerLimitIsQuietWithoutCgroups(t *testing.T) {
	var log bytes.Buffer
	limit := containerLimit(func() (uint64, error) { return 0, memlimit.ErrCgroupsNotSupported }, slog.New(slog.NewTextHandler(&log, nil)))
	if _, err := limit(); !errors.Is(err, memlimit.ErrNoLimit) {
		t.Errorf("limit = %v, want ErrNoLimit", err)
	}
	if log.Len() > 0 {
		t.Errorf("it logged at info or above:\n%s", log.String())
	}
}
