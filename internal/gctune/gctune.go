// Package gctune adapts the garbage collector's target (GOGC) to the live
// heap, after every collection.
//
// A gateway's live heap is small (1 to 2 MB for a few servers) and its
// garbage plentiful (every message decoded and encoded twice on its way
// through): at Go's default target (GOGC=100) the collector ran some 150
// times a second under load and took a third of the gateway's CPU. Letting
// a small heap grow fivefold before a collection (GOGC=400) saves most of
// that (BENCHMARKS.md). But a fixed GOGC=400, as before, also let the heap
// grow to five times a large live heap: forwarding a 10 MiB result holds
// several copies of it at once (most of them go-sdk's), and the heap then
// grew to some 26 times the result before the next collection. [Start]
// adapts the target instead ([PercentFor]): a small live heap may still
// grow fivefold, up to the floor, and a large one only twofold, as at Go's
// default.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

const (
	// HeapFloor is the heap that a small live heap may grow to before a
	// collection.
	HeapFloor = 32 << 20
	// MinPercent and MaxPercent bound the target: Go's default, and five
	// times the live heap.
	MinPercent = 100
	MaxPercent = 400
)

// PercentFor is the collector's target (GOGC) for a live heap of live
// bytes: the next collection comes when the heap reaches HeapFloor, or
// twice the live heap when that is more, and never later than at five
// times the live heap. 0, a live heap not known yet, gets MaxPercent.
func PercentFor(live uint64) int {
	switch {
	case live == 0:
		return MaxPercent
	case live >= HeapFloor:
		return MinPercent
	}
	p := (HeapFloor - live) * 100 / live
	return int(min(max(p, MinPercent), MaxPercent))
}

// Start sets the collector's target for the live heap, as live reports it
// ([LiveHeap]; tests give their own), now and after every collection, until
// stop. The target stays as set last. tuned, if not nil, is told each
// target set.
func Start(live func() uint64, tuned func(percent int)) (stop func()) {
	t := &tuner{live: live, tuned: tuned}
	t.tune()
	t.arm()
	return func() { t.stopped.Store(true) }
}

// LiveHeap is the heap that the last collection found live, or 0 before
// the first.
func LiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// A tuner runs as the cleanup of an object that it drops, which the runtime
// runs after the collection that finds the object unreachable; then it
// drops another.
type tuner struct {
	live    func() uint64
	tuned   func(int)
	percent int // the target set last; after Start, only the cleanup goroutine uses it
	stopped atomic.Bool
}

// sentinel is the object whose collection runs the tuner. It holds a
// pointer, so that the runtime never batches it with other small objects,
// which could keep it alive.
type sentinel struct{ _ *int }

func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), (*tuner).collected, t)
}

func (t *tuner) collected() {
	if t.stopped.Load() {
		return
	}
	t.tune()
	t.arm()
}

func (t *tuner) tune() {
	p := PercentFor(t.live())
	if p == t.percent {
		return
	}
	debug.SetGCPercent(p)
	t.percent = p
	if t.tuned != nil {
		t.tuned(p)
	}
}
