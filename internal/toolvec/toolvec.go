// Package toolvec adds an embedding endpoint's vectors to tool search's
// BM25F ranking, when one is configured: it keeps a vector per indexed
// tool, computed in the background, and fuses the cosine of a query's
// vector with the BM25F scores.
//
// # Lifecycle
//
//	Set/Remove ──▶ wanted texts ──(signal)──▶ worker: reads Dir's file once, then
//	                                          embeds the missing ones, MaxBatch
//	                                          at a time, publishes; writes the file
//	Rank ──▶ query vector (QueryTimeout) ──▶ fuse with the BM25F hits
//	         └─ no answer in time, an error, no vectors yet: BM25F alone
//
// Set and Remove never wait for the endpoint: they record what is wanted
// and wake the worker, the one goroutine that calls it for tools. Vectors
// are kept by a hash of (model, text), so a reload, a reconnect or a
// server's list_changed that leaves a tool's text as it was costs no
// request; up to MaxSpareVectors vectors of tools no longer indexed are
// kept for when they come back. With Options.Dir, they are kept across
// restarts too: the worker reads the endpoint's and model's file before
// its first pass, and replaces it after each pass that added vectors (see
// MaxStoredVectors and MaxFileBytes), so a restart costs a request only
// for the tools whose text is new. A failed pass is retried with backoff
// (RetryDelay, doubling to MaxRetryDelay), and each distinct error is
// logged once. A query whose vector does not come is logged only when it
// starts a run of such queries (an endpoint that goes down fails in
// several ways: a closed connection, then a refused one), and the first
// query that has its vector again says so.
//
// # Fusion
//
// With the query's vector q and each visible tool's vector t (both of unit
// length), a tool scores
//
//	bm25(t)/max bm25 + Weight · cos(q, t)
//
// over the tools BM25F matched and those whose cosine is above 0: a tool
// without a vector yet has BM25F alone, and a tool that shares no word
// with the query comes in through its cosine. Hidden tools (the visible
// function) are neither ranked nor counted, on either side.
package toolvec

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/switchboard-mcp/switchboard/internal/toolsearch"
)

// DefaultQueryTimeout is how long a search waits for its query's vector
// when Options.QueryTimeout is zero: past it, BM25F answers alone. A local
// model answers a short text in a few milliseconds to tens of them.
const DefaultQueryTimeout = 250 * time.Millisecond

// DefaultWeight is the weight of the cosine against the BM25F score
// normalised to 1, when Options.Weight is zero: chosen on the tuning split
// of bench/toolsearch with the Universal Sentence Encoder lite, where MRR
// was 0.570 at 0.25, 0.581 at 1, 0.589 at 1.25, 0.588 at 1.5 and 0.579 at
// 3 (BM25F alone 0.565). Reciprocal rank fusion did worse there (0.571 at
// best, with k 10), so the sum it is (see bench/toolsearch's README).
const DefaultWeight = 1.25

// MaxQueriesInFlight is how many searches may wait for their query's
// vector at once: past it, a search ranks by BM25F alone at once, so that a
// burst of searches puts no more than this many requests on the endpoint.
const MaxQueriesInFlight = 8

// MaxBatch is the most tool texts the worker asks for in one call of the
// embedder.
const MaxBatch = 64

// DefaultMaxSpareVectors is how many vectors of tools no longer indexed
// are kept, the least recently used dropped first, when
// Options.MaxSpareVectors is zero. The vectors of indexed tools are
// always kept.
const DefaultMaxSpareVectors = 5000

// DefaultRetryDelay is the wait after a failed pass before the next, when
// Options.RetryDelay is zero; it doubles with each failure in a row up to
// MaxRetryDelay.
const DefaultRetryDelay = 5 * time.Second

// MaxRetryDelay caps the wait between failed passes.
const MaxRetryDelay = 5 * time.Minute

// maxLoggedErrors bounds the distinct errors remembered as logged; past
// it the memory is cleared, and an error may be logged again.
const maxLoggedErrors = 64

// An Embedder turns texts into vectors, one per text in order, all of one
// size: an *embed.Client.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Doc is one tool to embed: its public name, and the text its vector is of
// ([Text]).
type Doc struct {
	Name string
	Text string
}

// Options configure a [Ranker]. A nil *Options means all defaults.
type Options struct {
	Logger          *slog.Logger
	QueryTimeout    time.Duration // default DefaultQueryTimeout
	Weight          float64       // default DefaultWeight
	MaxSpareVectors int           // default DefaultMaxSpareVectors
	RetryDelay      time.Duration // default DefaultRetryDelay
	// Endpoint names the embedder in log lines (its URL without
	// credentials), and with the model, the file in Dir.
	Endpoint string
	// Dir, if set, is the directory where the vectors are kept across
	// restarts: one file per endpoint and model ([FileName]), read when
	// the worker starts and replaced (readable by its owner alone) after
	// a pass that added vectors. Empty: in memory only.
	Dir string
}

// Ranker keeps the vectors of indexed tools and fuses them into rankings.
// It is safe for concurrent use. Use [New], and [Ranker.Close] when done.
type Ranker struct {
	// Set by New, read-only after.
	e       Embedder
	model   string
	o       Options
	wake    chan struct{} // cap 1: the wanted texts changed
	queries chan struct{} // cap MaxQueriesInFlight: a token per query waiting
	cancel  context.CancelFunc
	done    chan struct{} // closed when the worker returns

	snap atomic.Pointer[vectors] // what Rank reads

	mu      sync.Mutex // guards the following
	want    map[string][]Doc
	cache   map[[32]byte]*cached
	clock   uint64        // stamps cache use
	changed chan struct{} // closed and replaced when a pass ends
	lastErr error         // of the last pass; nil if it succeeded
	dims    int           // of the vectors in cache; 0 if none yet
	dirty   bool          // the cache has vectors that Dir's file has not
	logged  map[string]bool
	// queryFailing is whether the last query's vector failed to come.
	queryFailing bool
}

// cached is a vector, of unit length, and when it was last wanted.
type cached struct {
	vec  []float32
	used uint64
}

// vectors is a published set: per server, its tools that have a vector.
type vectors struct {
	byServer map[string][]named
	dims     int
}

type named struct {
	name string
	vec  []float32
}

// New returns a ranker that asks e for the vectors of model (the model
// names the cache's keys) and starts its worker. It does no I/O until a
// tool is Set.
func New(e Embedder, model string, opts *Options) *Ranker {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	if o.Weight <= 0 {
		o.Weight = DefaultWeight
	}
	if o.MaxSpareVectors <= 0 {
		o.MaxSpareVectors = DefaultMaxSpareVectors
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Ranker{
		e: e, model: model, o: o,
		wake: make(chan struct{}, 1), queries: make(chan struct{}, MaxQueriesInFlight), cancel: cancel, done: make(chan struct{}),
		want: make(map[string][]Doc), cache: make(map[[32]byte]*cached),
		changed: make(chan struct{}), logged: make(map[string]bool),
	}
	r.snap.Store(&vectors{})
	go r.run(ctx)
	return r
}

// Close stops the worker, cancelling a request in flight, and waits for
// it; then it closes the embedder's idle connections, if it has a
// CloseIdleConnections method. It is idempotent.
func (r *Ranker) Close() {
	r.cancel()
	<-r.done
	if c, ok := r.e.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Set makes docs the tools of server (none removes it) and wakes the
// worker to embed those it has no vector for. It never waits for the
// endpoint.
func (r *Ranker) Set(server string, docs []Doc) {
	r.mu.Lock()
	if len(docs) == 0 {
		delete(r.want, server)
	} else {
		r.want[server] = slices.Clone(docs)
	}
	r.publishLocked()
	r.mu.Unlock()
	r.wakeWorker()
}

// wakeWorker asks the worker for a pass.
func (r *Ranker) wakeWorker() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Remove removes the tools of server.
func (r *Ranker) Remove(server string) { r.Set(server, nil) }

// Wait returns when every tool Set has a vector, or with the error of the
// last pass if it failed, or ctx's error.
func (r *Ranker) Wait(ctx context.Context) error {
	for {
		r.mu.Lock()
		missing := len(r.missingLocked()) > 0
		err, ch := r.lastErr, r.changed
		r.mu.Unlock()
		switch {
		case !missing:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// key is the cache key of a text's vector.
func (r *Ranker) key(text string) [32]byte {
	return sha256.Sum256([]byte(r.model + "\x00" + text))
}

// missingLocked returns the wanted texts without a vector, each once, in
// order of server and tool.
func (r *Ranker) missingLocked() []string {
	var out []string
	seen := make(map[string]bool)
	for _, server := range sortedKeys(r.want) {
		for _, d := range r.want[server] {
			if r.cache[r.key(d.Text)] == nil && !seen[d.Text] {
				seen[d.Text] = true
				out = append(out, d.Text)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// publishLocked publishes the vectors of the wanted tools that have one,
// and marks them used.
func (r *Ranker) publishLocked() {
	r.clock++
	v := &vectors{byServer: make(map[string][]named, len(r.want))}
	for server, docs := range r.want {
		var list []named
		for _, d := range docs {
			if c := r.cache[r.key(d.Text)]; c != nil {
				c.used = r.clock
				list = append(list, named{d.Name, c.vec})
				v.dims = len(c.vec)
			}
		}
		if len(list) > 0 {
			v.byServer[server] = list
		}
	}
	r.snap.Store(v)
	r.pruneLocked()
}

// pruneLocked drops the least recently used vectors that no wanted tool
// has, beyond MaxSpareVectors of them.
func (r *Ranker) pruneLocked() {
	var spare [][32]byte
	for k, c := range r.cache {
		if c.used != r.clock {
			spare = append(spare, k)
		}
	}
	if len(spare) <= r.o.MaxSpareVectors {
		return
	}
	slices.SortFunc(spare, func(a, b [32]byte) int { return cmp.Compare(r.cache[a].used, r.cache[b].used) })
	for _, k := range spare[:len(spare)-r.o.MaxSpareVectors] {
		delete(r.cache, k)
	}
}

// run is the worker: a pass on each wake, and after a failed one, another
// after a backoff.
func (r *Ranker) run(ctx context.Context) {
	defer close(r.done)
	r.load()
	failures := 0
	var retry <-chan time.Time
	var timer *time.Timer
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-r.wake:
		case <-retry:
		}
		err := r.pass(ctx)
		r.save()
		if ctx.Err() != nil {
			continue
		}
		if timer != nil {
			timer.Stop()
		}
		retry = nil
		if err == nil {
			failures = 0
			continue
		}
		delay := min(r.o.RetryDelay<<min(failures, 20), MaxRetryDelay)
		failures++
		timer = time.NewTimer(delay)
		retry = timer.C
	}
}

// pass embeds the missing texts, MaxBatch at a time, publishing after
// each batch.
func (r *Ranker) pass(ctx context.Context) error {
	r.mu.Lock()
	missing := r.missingLocked()
	r.mu.Unlock()
	var err error
	for start := 0; start < len(missing) && err == nil; start += MaxBatch {
		batch := missing[start:min(start+MaxBatch, len(missing))]
		var vecs [][]float32
		if vecs, err = r.e.Embed(ctx, batch); err == nil && len(vecs) != len(batch) {
			err = errors.New("the embedder gave " + itoa(len(vecs)) + " vectors for " + itoa(len(batch)) + " texts")
		} else if err == nil && slices.ContainsFunc(vecs, func(v []float32) bool { return len(v) == 0 || len(v) != len(vecs[0]) }) {
			err = errors.New("the embedder gave vectors of different dimensions, or none")
		}
		r.mu.Lock()
		if err == nil {
			if d := len(vecs[0]); d != r.dims {
				// A model that changed its dimensions behind its name
				// (or a kept file of another): the old vectors go.
				r.dropDimsLocked(d)
			}
			for i, v := range vecs {
				r.cache[r.key(batch[i])] = &cached{vec: unit(v)}
			}
			r.dirty = true
			r.publishLocked()
		}
		r.mu.Unlock()
	}
	if err != nil && ctx.Err() == nil {
		r.logOnce("tool search could not embed tools; they are ranked by BM25F alone until it can", err)
	}
	r.mu.Lock()
	r.lastErr = err
	r.signalLocked()
	r.mu.Unlock()
	return err
}

// signalLocked wakes the waiters of Wait.
func (r *Ranker) signalLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// dropDimsLocked drops the cached vectors of other dimensions than dims,
// which become the cache's.
func (r *Ranker) dropDimsLocked(dims int) {
	for k, c := range r.cache {
		if len(c.vec) != dims {
			delete(r.cache, k)
		}
	}
	r.dims = dims
	r.dirty = true
}

// logOnce logs err with msg unless the same error was logged before.
func (r *Ranker) logOnce(msg string, err error) {
	r.mu.Lock()
	text := err.Error()
	seen := r.logged[text]
	if !seen {
		if len(r.logged) >= maxLoggedErrors {
			clear(r.logged)
		}
		r.logged[text] = true
	}
	r.mu.Unlock()
	if !seen {
		r.o.Logger.Warn(msg, "endpoint", r.o.Endpoint, "model", r.model, "error", err)
	}
}

// Ready reports whether any indexed tool has a vector: until then Rank
// does not ask for the query's.
func (r *Ranker) Ready() bool { return len(r.snap.Load().byServer) > 0 }

// Rank fuses hits, the BM25F ranking of query over the visible tools (all
// of the tools it matched, best first), with the cosine of query's vector,
// and returns the best limit, best first, ties by name then server; ok is
// false, and hits should answer, when there is no vector to fuse with: no
// tool has one yet, or the query's did not come within QueryTimeout (or
// the embedder failed: logged when a run of such queries starts), or
// MaxQueriesInFlight searches wait for theirs already. Tools
// visible rejects are never ranked.
func (r *Ranker) Rank(ctx context.Context, query string, hits []toolsearch.Hit, visible func(string) bool, limit int) (_ []toolsearch.Hit, ok bool) {
	v := r.snap.Load()
	if len(v.byServer) == 0 || limit < 1 {
		return nil, false
	}
	select {
	case r.queries <- struct{}{}:
		defer func() { <-r.queries }()
	default:
		return nil, false // MaxQueriesInFlight wait already
	}
	query, _ = toolsearch.CutQuery(query)
	ctx, cancel := context.WithTimeout(ctx, r.o.QueryTimeout)
	defer cancel()
	qv, err := r.e.Embed(ctx, []string{query})
	switch {
	case err == nil && len(qv) == 1 && len(qv[0]) > 0 && len(qv[0]) != v.dims:
		// The tools' vectors are of other dimensions: kept from a model
		// that changed behind its name. They go, and are embedded again.
		r.mu.Lock()
		if r.dims != len(qv[0]) {
			r.dropDimsLocked(len(qv[0]))
			r.publishLocked()
		}
		r.mu.Unlock()
		r.wakeWorker()
		err = errors.New("the query's vector has " + itoa(len(qv[0])) + " dimensions, the tools' " + itoa(v.dims) + ": they are embedded again")
	case err == nil && (len(qv) != 1 || len(qv[0]) == 0):
		err = errors.New("the embedder gave " + itoa(len(qv)) + " vectors for the query, or an empty one")
	case err != nil && ctx.Err() != nil:
		err = errors.New("no answer within the query timeout (" + r.o.QueryTimeout.String() + ")")
	}
	r.mu.Lock()
	started, ended := err != nil && !r.queryFailing, err == nil && r.queryFailing
	r.queryFailing = err != nil
	r.mu.Unlock()
	switch {
	case started:
		r.o.Logger.Warn("tool search ranks by BM25F alone until a query's vector comes again", "endpoint", r.o.Endpoint, "model", r.model, "error", err)
	case ended:
		r.o.Logger.Info("tool search ranks with embeddings again: a query's vector came", "endpoint", r.o.Endpoint, "model", r.model)
	}
	if err != nil {
		return nil, false
	}
	return fuse(hits, v, unit(qv[0]), visible, r.o.Weight, limit), true
}

// fuse scores each tool as the package doc says.
func fuse(hits []toolsearch.Hit, v *vectors, q []float32, visible func(string) bool, w float64, limit int) []toolsearch.Hit {
	type id struct{ server, name string }
	scores := make(map[id]float64, len(hits))
	if len(hits) > 0 && hits[0].Score > 0 {
		top := hits[0].Score
		for _, h := range hits {
			scores[id{h.Server, h.Name}] = h.Score / top
		}
	}
	for server, list := range v.byServer {
		for _, t := range list {
			if visible != nil && !visible(t.name) {
				continue
			}
			k := id{server, t.name}
			_, matched := scores[k]
			if c := dot(q, t.vec); matched || c > 0 {
				scores[k] += w * c
			}
		}
	}
	out := make([]toolsearch.Hit, 0, len(scores))
	for k, s := range scores {
		out = append(out, toolsearch.Hit{Name: k.name, Server: k.server, Score: s})
	}
	slices.SortFunc(out, func(a, b toolsearch.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.Server, b.Server)
	})
	return out[:min(limit, len(out))]
}

// unit returns v scaled to length 1 (a zero vector stays zero).
func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	n = math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// MaxTextBytes is the most of a tool's description [Text] keeps: its first
// line, cut between words.
const MaxTextBytes = 400

// Text returns the text a tool's vector is of: its public name's tool part
// in words, its title, and the first line of its description within
// MaxTextBytes ("read file. Read File: Read the complete contents of a
// file").
func Text(name, title, description string) string {
	if _, tool, ok := strings.Cut(name, "__"); ok {
		name = tool
	}
	var b strings.Builder
	prev := rune(0)
	for _, c := range name {
		switch {
		case c == '_' || c == '-' || c == '.':
			c = ' '
		case unicode.IsUpper(c) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(c)
		prev = c
	}
	line, _, _ := strings.Cut(strings.TrimSpace(description), "\n")
	line, _ = toolsearch.CutWords(line, MaxTextBytes)
	parts := []string{b.String() + "."}
	for _, s := range []string{title, line} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}
