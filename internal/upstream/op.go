package upstream

// An op is something the owner goroutine does for waiters: a connection
// attempt, or a stop. Waiters select on done, then read err.
type op struct {
	done chan struct{}
	err  error // set before done is closed
}

func newOp() *op { return &op{done: make(chan struct{})} }

// finish records err and wakes the waiters. Only the owner goroutine (or
// Close, when there is none) finishes an op, once.
func (o *op) finish(err error) {
	o.err = err
	close(o.done)
}

// doneOf returns the channel closed when a ends, or a closed one for nil.
func doneOf(a *op) <-chan struct{} {
	if a == nil {
		return closed
	}
	return a.done
}

// closed is a channel closed from the start.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// signal sends on a buffered channel of size 1 without blocking: a signal
// already pending covers this one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
