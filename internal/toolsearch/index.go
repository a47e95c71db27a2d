package toolsearch

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// Errors callers can branch on with errors.Is.
var (
	// ErrBadOptions: an Options value is out of range.
	ErrBadOptions = errors.New("invalid ranking options")
	// ErrBadDoc: a server name or tool given to Set or Replace is invalid
	// (empty name, the same name twice in one server, a schema that is not a
	// JSON object).
	ErrBadDoc = errors.New("invalid tool")
	// ErrEmptyQuery: the query is empty or has no word to search for (only
	// spaces, punctuation or stop words).
	ErrEmptyQuery = errors.New("empty query")
	// ErrBadLimit: the limit is below 1.
	ErrBadLimit = errors.New("invalid limit")
)

// Doc is one tool to index.
type Doc struct {
	// Name is the public name, unique within its server. If it has the
	// form <prefix>__<tool>, the <tool> part is also a whole term, so a
	// query that names the tool as its server does finds it.
	Name string
	// Title and Description are the tool's.
	Title, Description string
	// InputSchema is the tool's input schema: a map[string]any, a
	// json.RawMessage or []byte, or anything encoding/json turns into a
	// JSON object (such as a *jsonschema.Schema). Nil means no parameters.
	InputSchema any
	// Context is what is known of the tool's server, the same for each
	// of its tools ([ServerContext]): its name, a description given in
	// configuration, its package, what it says it is. A server's tools are
	// found by what the server is for ("remember" finds a memory server's
	// tools). Consecutive tools with the same Context analyse it once.
	//
	// A server's instructions are not in it: prose for a model on how to
	// use the server, which says what it is for among much else, they
	// ranked no better on the retrieval benchmark's tuning split
	// (bench/toolsearch; BENCHMARKS.md) and worse on its held-out one.
	Context string
}

// Index is an in-memory BM25F index of tool definitions, one group of tools
// per server. Set, Remove and Replace change it; Search reads it. It is safe
// for concurrent use: a search reads an immutable snapshot and never waits,
// and changes are serialized among themselves, each publishing a new
// snapshot that shares every other server's part with the last one.
//
// Public names are meant to be unique across servers, but the index does not
// require it (a tool may be renamed from one server's group to another's in
// two changes); a name under two servers is two tools, and ties between them
// are broken by server. Use [New]: the zero Index is not ready.
type Index struct {
	p params // read-only after New

	mu   sync.Mutex // serializes changes and guards an
	an   analyzer   // with the term cache
	snap atomic.Pointer[snapshot]
}

// New returns an empty index with the given ranking options (nil means
// [DefaultOptions]); the options are copied.
func New(opts *Options) (*Index, error) {
	if opts == nil {
		opts = DefaultOptions()
	}
	p, err := opts.params()
	if err != nil {
		return nil, fmt.Errorf("toolsearch: new: %w", err)
	}
	x := &Index{p: p, an: analyzer{cache: make(map[string]string)}}
	x.snap.Store(&snapshot{})
	return x, nil
}

// Set replaces the tools of server with tools (none removes the server),
// leaving every other server's as they were. On error nothing changes.
func (x *Index) Set(server string, tools []Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	seg, err := x.buildLocked(server, tools)
	if err != nil {
		return fmt.Errorf("toolsearch: set: %w", err)
	}
	x.snap.Store(x.snap.Load().with(server, seg))
	return nil
}

// Remove removes the tools of server; it does nothing if there are none.
func (x *Index) Remove(server string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.snap.Store(x.snap.Load().with(server, nil))
}

// Replace replaces the whole contents with the given tools by server, at
// once: a search sees either the old contents or the new. On error nothing
// changes.
func (x *Index) Replace(tools map[string][]Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	segs := make([]*segment, 0, len(tools))
	for _, server := range slices.Sorted(maps.Keys(tools)) {
		seg, err := x.buildLocked(server, tools[server])
		if err != nil {
			return fmt.Errorf("toolsearch: replace: %w", err)
		}
		if seg != nil {
			segs = append(segs, seg)
		}
	}
	x.snap.Store(newSnapshot(segs))
	return nil
}

// Len returns the number of tools indexed.
func (x *Index) Len() int { return x.snap.Load().docs }

// snapshot is an immutable state of the index.
type snapshot struct {
	segments []*segment     // sorted by server
	offsets  []int          // offsets[i] is the number of docs in segments[:i]
	docs     int            // total docs
	fieldLen [numFields]int // total terms per field over all docs
}

func newSnapshot(segs []*segment) *snapshot {
	s := &snapshot{segments: segs, offsets: make([]int, len(segs))}
	for i, seg := range segs {
		s.offsets[i] = s.docs
		s.docs += len(seg.docs)
		for f, n := range seg.fieldLen {
			s.fieldLen[f] += n
		}
	}
	return s
}

// with returns a snapshot in which server's segment is seg (nil: none).
func (s *snapshot) with(server string, seg *segment) *snapshot {
	segs := make([]*segment, 0, len(s.segments)+1)
	for _, old := range s.segments {
		if old.server != server {
			segs = append(segs, old)
		}
	}
	if seg != nil {
		i, _ := slices.BinarySearchFunc(segs, server, func(s *segment, server string) int { return cmp.Compare(s.server, server) })
		segs = slices.Insert(segs, i, seg)
	}
	return newSnapshot(segs)
}
