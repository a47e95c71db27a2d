// Package fifo applies work on a goroutine of its own, in the order it was
// queued, so that whoever queues it never waits for it: the manager's
// events, their delivery to subscribers, and the tool cache's writes each
// go through one.
package fifo

import (
	"context"
	"sync"
)

// A Queue applies the items pushed to it in batches, in the order they
// were pushed, from one goroutine. Its methods may be called from any
// goroutine but the one that applies.
type Queue[T any] struct {
	apply func(batch []T)

	mu      sync.Mutex
	items   []T
	flushes []chan struct{} // closed once what was pushed before them is applied
	holds   int             // while > 0, queue but apply nothing
	closing bool
	wake    chan struct{} // buffered, 1
	done    chan struct{} // closed when the goroutine returns
}

// New returns a Queue that applies its items with apply, and starts its
// goroutine. apply gets every item pushed since its last call, oldest
// first, and never runs twice at once.
func New[T any](apply func(batch []T)) *Queue[T] {
	q := &Queue[T]{apply: apply, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// Push queues items. It reports false, and queues nothing, once Close has
// been called.
func (q *Queue[T]) Push(items ...T) bool {
	q.mu.Lock()
	closing := q.closing
	if !closing {
		q.items = append(q.items, items...)
	}
	q.mu.Unlock()
	q.signal()
	return !closing
}

// Flush waits until every item pushed before it has been applied, or until
// ctx is done, and then returns ctx's error. Called from apply, it waits
// for itself: only ctx ends it.
func (q *Queue[T]) Flush(ctx context.Context) error {
	done := make(chan struct{})
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		done = q.done
	} else {
		q.flushes = append(q.flushes, done)
		q.mu.Unlock()
		q.signal()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Hold makes the queue apply nothing until release is called, so that what
// is pushed meanwhile is applied as one batch. A second call of the same
// release does nothing. Close applies what is held.
func (q *Queue[T]) Hold() (release func()) {
	q.mu.Lock()
	q.holds++
	q.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			q.holds--
			q.mu.Unlock()
			q.signal()
		})
	}
}

// Close applies what is queued, then stops the goroutine and returns.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closing = true
	q.mu.Unlock()
	q.signal()
	<-q.done
}

func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default: // a wake-up already pending covers this one
	}
}

func (q *Queue[T]) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		if q.holds > 0 && !q.closing {
			q.mu.Unlock()
			<-q.wake
			continue
		}
		batch, flushes, closing := q.items, q.flushes, q.closing
		q.items, q.flushes = nil, nil
		q.mu.Unlock()
		if len(batch) > 0 {
			q.apply(batch)
		}
		for _, f := range flushes {
			close(f)
		}
		if closing && len(batch) == 0 {
			return
		}
		if len(batch) == 0 && len(flushes) == 0 {
			<-q.wake
		}
	}
}
