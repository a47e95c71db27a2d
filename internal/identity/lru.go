package identity

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// An expiring is a bounded cache of values by the SHA-256 of a token
// (never the token), each until a time; past its size, the least recently
// used goes first. It is safe for concurrent use.
type expiring[V any] struct {
	now  func() time.Time
	size int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element // of *entry[V]
	lru     *list.List                          // most recently used first
}

type entry[V any] struct {
	key   [sha256.Size]byte
	value V
	until time.Time
}

func newExpiring[V any](size int, now func() time.Time) *expiring[V] {
	return &expiring[V]{now: now, size: size, entries: map[[sha256.Size]byte]*list.Element{}, lru: list.New()}
}

// get returns the value of key, if it is cached and now is before its
// time.
func (c *expiring[V]) get(key [sha256.Size]byte) (v V, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return v, false
	}
	en := e.Value.(*entry[V])
	if !c.now().Before(en.until) {
		c.lru.Remove(e)
		delete(c.entries, key)
		return v, false
	}
	c.lru.MoveToFront(e)
	return en.value, true
}

// put caches v as the value of key until until.
func (c *expiring[V]) put(key [sha256.Size]byte, v V, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.lru.Remove(e)
	}
	c.entries[key] = c.lru.PushFront(&entry[V]{key: key, value: v, until: until})
	for c.lru.Len() > c.size {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*entry[V]).key)
	}
}
