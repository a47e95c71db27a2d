package fifo

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder keeps what a queue applied, batch by batch.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
}

func (r *recorder) apply(batch []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, slices.Clone(batch))
}

func (r *recorder) applied() (all []int, batches int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.batches {
		all = append(all, b...)
	}
	return all, len(r.batches)
}

// held returns a held queue, its recorder and its release; the queue is
// closed when the test ends.
func held(t *testing.T) (*recorder, *Queue[int], func()) {
	r := new(recorder)
	q := New(r.apply)
	t.Cleanup(q.Close)
	return r, q, q.Hold()
}

// TestFlushWaitsForWhatCameBefore: after Flush, everything pushed before it
// is applied, in order.
func TestFlushWaitsForWhatCameBefore(t *testing.T) {
	var r recorder
	q := New(r.apply)
	defer q.Close()
	for i := range 100 {
		q.Push(i)
	}
	q.Flush(t.Context())
	var want []int
	for i := range 100 {
		want = append(want, i)
	}
	if got, _ := r.applied(); !slices.Equal(got, want) {
		t.Errorf("applied %v, want 0..99 in order", got)
	}
}

// TestHoldAppliesAsOneBatch: nothing is applied while held, and what was
// held is applied in one batch on release.
func TestHoldAppliesAsOneBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, q, release := held(t)
		q.Push(1)
		q.Push(2, 3)
		synctest.Wait()
		if got, _ := r.applied(); len(got) != 0 {
			t.Fatalf("applied %v while held", got)
		}
		release()
		release() // a second call does nothing more
		q.Flush(t.Context())
		if got, batches := r.applied(); !slices.Equal(got, []int{1, 2, 3}) || batches != 1 {
			t.Errorf("applied %v in %d batches, want [1 2 3] in 1", got, batches)
		}
	})
}

// TestCloseAppliesWhatIsQueued: Close applies what was queued, held or
// not, and the queue takes nothing after it.
func TestCloseAppliesWhatIsQueued(t *testing.T) {
	var r recorder
	q := New(r.apply)
	q.Hold()
	q.Push(1, 2)
	q.Close()
	if got, _ := r.applied(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("applied %v by Close, want [1 2]", got)
	}
	if q.Push(3) {
		t.Error("Push after Close reported the item queued")
	}
	q.Flush(t.Context()) // returns at once
	if got, _ := r.applied(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("applied %v, want nothing after Close", got)
	}
}

// TestFlushEndsWithItsContext: a Flush that waits for a held queue, or for
// an apply that waits for it in turn, ends with its context.
func TestFlushEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, q, release := held(t)
		q.Push(1)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := q.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush of a held queue = %v, want its deadline", err)
		}
		release()
		if err := q.Flush(t.Context()); err != nil {
			t.Errorf("Flush after release = %v", err)
		}
		if got, _ := r.applied(); !slices.Equal(got, []int{1}) {
			t.Errorf("applied %v, want [1]", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var reentered error
		var q *Queue[int]
		q = New(func([]int) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			reentered = q.Flush(ctx)
		})
		q.Push(1)
		q.Close()
		if !errors.Is(reentered, context.DeadlineExceeded) {
			t.Errorf("a Flush from apply = %v, want its deadline", reentered)
		}
	})
}
