package gateway

import (
	"context"
	"sync"
)

// uriLocks holds a lock per URI, made when it is first wanted and dropped
// when no one holds or waits for it: subscription changes of one URI take
// turns, those of others go on.
type uriLocks struct {
	mu    sync.Mutex
	locks map[string]*uriLock
}

type uriLock struct {
	token chan struct{} // holds one value while the lock is held
	users int           // holders and waiters; guarded by uriLocks.mu
}

// lock locks uri, and returns what unlocks it; it gives up when ctx ends,
// with ctx's error.
func (l *uriLocks) lock(ctx context.Context, uri string) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = make(map[string]*uriLock)
	}
	ul := l.locks[uri]
	if ul == nil {
		ul = &uriLock{token: make(chan struct{}, 1)}
		l.locks[uri] = ul
	}
	ul.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if ul.users--; ul.users == 0 {
			delete(l.locks, uri)
		}
	}
	select {
	case ul.token <- struct{}{}:
		return func() { <-ul.token; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
