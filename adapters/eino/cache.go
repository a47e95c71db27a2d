package einotools

import (
	"runtime"
	"sync"
	"weak"

	"github.com/eino-contrib/jsonschema"

	"github.com/switchboard-mcp/switchboard"
)

// schemaCache keeps, for one manager, the converted schema of each tool
// by public name, with the tool it was converted from, so that [Tools]
// at each turn converts only the tools that changed. It is safe for
// concurrent use.
type schemaCache struct {
	mu        sync.Mutex
	entries   map[string]cachedSchema
	converted int // conversions made, for tests
}

type cachedSchema struct {
	tool   switchboard.Tool
	params *jsonschema.Schema
}

// caches holds a *schemaCache by weak.Pointer[switchboard.Manager]: an
// entry goes when its manager is collected, so the caches neither keep a
// manager alive nor outlive it. A cached switchboard.Tool holds no
// reference to its manager.
var caches sync.Map

// cacheOf returns m's cache.
func cacheOf(m *switchboard.Manager) *schemaCache {
	key := weak.Make(m)
	if c, ok := caches.Load(key); ok {
		return c.(*schemaCache)
	}
	c, loaded := caches.LoadOrStore(key, &schemaCache{entries: make(map[string]cachedSchema)})
	if !loaded {
		runtime.AddCleanup(m, func(k weak.Pointer[switchboard.Manager]) { caches.Delete(k) }, key)
	}
	return c.(*schemaCache)
}

// params returns t's converted input schema: the one converted last for
// t's public name while [switchboard.Tool.Same] reports t unchanged,
// otherwise a new conversion, which it keeps.
func (c *schemaCache) params(t switchboard.Tool) (*jsonschema.Schema, error) {
	c.mu.Lock()
	e, ok := c.entries[t.Name]
	c.mu.Unlock()
	if ok && e.tool.Same(t) {
		return e.params, nil
	}
	params, err := convertSchema(t.InputSchema())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.entries[t.Name] = cachedSchema{tool: t, params: params}
	c.converted++
	c.mu.Unlock()
	return params, nil
}

// keep drops the entries of the tools that m no longer exposes, or
// exposes changed, so that the cache holds at most one entry for each of
// m's tools; ts, tools m exposes now, need not be looked up.
func (c *schemaCache) keep(m *switchboard.Manager, ts []switchboard.Tool) {
	names := make(map[string]bool, len(ts))
	for _, t := range ts {
		names[t.Name] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range c.entries {
		if names[name] {
			continue
		}
		if t, ok := m.Lookup(name); !ok || !t.Same(e.tool) {
			delete(c.entries, name)
		}
	}
}
