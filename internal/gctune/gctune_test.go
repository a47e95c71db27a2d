package gctune

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestPercentFor: a small live heap may grow fivefold, up to HeapFloor; a
// large one twofold.
func TestPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, MaxPercent}, // nothing collected yet
		{1 << 20, MaxPercent},
		{HeapFloor / 5, MaxPercent},
		{8 << 20, 300},
		{HeapFloor / 2, MinPercent},
		{HeapFloor, MinPercent},
		{1 << 40, MinPercent},
	} {
		if got := PercentFor(tc.live); got != tc.want {
			t.Errorf("PercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// TestStartFollowsTheLiveHeap: the target is set at once, and after a
// collection it follows the live heap that the collection found.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var live atomic.Uint64
	live.Store(1 << 20)
	tuned := make(chan int, 16)
	stop := Start(live.Load, func(p int) { tuned <- p })
	defer stop()
	if p := <-tuned; p != MaxPercent {
		t.Fatalf("a small live heap: GOGC %d, want %d", p, MaxPercent)
	}
	if got := debug.SetGCPercent(MaxPercent); got != MaxPercent {
		t.Errorf("GOGC is %d, want %d", got, MaxPercent)
	}
	live.Store(HeapFloor)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC() // the tuner runs after a collection: make them until it has
		select {
		case p := <-tuned:
			if p != MinPercent {
				t.Fatalf("a large live heap: GOGC %d, want %d", p, MinPercent)
			}
			if got := debug.SetGCPercent(p); got != MinPercent {
				t.Errorf("GOGC is %d, want %d", got, MinPercent)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the tuner did not run within 10 s of collections")
		}
	}
}

// TestLiveHeap: the runtime reports the live heap once it has collected.
func TestLiveHeap(t *testing.T) {
	runtime.GC()
	if LiveHeap() == 0 {
		t.Error("LiveHeap() = 0 after a collection")
	}
}

func ExamplePercentFor() {
	fmt.Println(PercentFor(2<<20), PercentFor(8<<20), PercentFor(64<<20))
	// Output: 400 300 100
}
