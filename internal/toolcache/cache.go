package toolcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/userfile"
)

// DefaultTTL is how long an entry is served after its list was fetched.
const DefaultTTL = 30 * 24 * time.Hour

// Version is the version of the file format. A file with another version is
// a miss.
const Version = 1

// Options configures a [Cache]. The zero value, like a nil *Options, means
// the defaults.
type Options struct {
	// TTL is how long an entry is served after its list was fetched.
	// Zero or less means DefaultTTL.
	TTL time.Duration
	// Now returns the current time. Nil means time.Now; tests pass a fake
	// clock.
	Now func() time.Time
	// Logger receives a warning for each corrupt file. Nil means discard.
	Logger *slog.Logger
}

// Cache is a directory of cached tool lists, one file per server. It is safe
// for concurrent use, also by several processes: files are replaced by atomic
// renames, so readers never see a partial file.
//
// A nil *Cache is valid and does nothing, as does a Cache with no directory.
type Cache struct {
	// The following are set by Open and read-only after that.
	dir    string
	ttl    time.Duration
	now    func() time.Time
	logger *slog.Logger

	// beforeRename, if set, is called with the temporary file's path before
	// anything is written to it. Tests use it to inject write failures.
	beforeRename func(tmp string) error

	// mu protects servers. It is never held while a serverLock's mu is
	// acquired, nor during I/O.
	mu      sync.Mutex
	servers map[string]*serverLock
}

// serverLock serializes the writes of one server within a Cache.
type serverLock struct {
	// mu protects latest, and is held for the whole of a Put or Remove.
	mu sync.Mutex
	// latest is the fetch time of the newest list written or removed
	// through this Cache; zero if none.
	latest time.Time
}

// Open returns a cache in dir. It does no I/O: the directory is created by
// the first [Cache.Put] that stores a list. An empty dir means [DefaultDir];
// if that is empty too, the returned Cache does nothing. opts may be nil.
func Open(dir string, opts *Options) *Cache {
	var o Options
	if opts != nil {
		o = *opts
	}
	if dir == "" {
		dir = DefaultDir()
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Cache{
		dir:     dir,
		ttl:     o.TTL,
		now:     o.Now,
		logger:  o.Logger,
		servers: make(map[string]*serverLock),
	}
}

// DefaultDir returns the default cache directory,
// os.UserCacheDir()/switchboard/tools, or "" if there is no user cache dir.
func DefaultDir() string {
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		return ""
	}
	return filepath.Join(base, "switchboard", "tools")
}

// Dir returns the cache's directory, or "" if the cache does nothing.
func (c *Cache) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// entry is the JSON form of a cache file. Pointers tell missing fields from
// zero values.
type entry struct {
	Version     *int            `json:"version"`
	Fingerprint *string         `json:"fingerprint"`
	Server      *string         `json:"server"`
	SavedAt     *time.Time      `json:"savedAt"`
	Tools       json.RawMessage `json:"tools"`
	// ServerInfo and Instructions are absent in files of older versions.
	ServerInfo   *serverInfo `json:"serverInfo,omitempty"`
	Instructions string      `json:"instructions,omitempty"`
	StdoutNoise  bool        `json:"stdoutNoise,omitempty"`
	Failure      *failure    `json:"failure,omitempty"`
}

// failure is the JSON form of Notes.Failure and Notes.FailedAt.
type failure struct {
	Error string    `json:"error"`
	At    time.Time `json:"at"`
}

// serverInfo is the JSON form of About.ServerInfo: an mcp.Implementation
// without its icons.
type serverInfo struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
}

// file is a decoded, well-formed cache file.
type file struct {
	fingerprint string
	server      string
	savedAt     time.Time
	tools       []*mcp.Tool
	about       About
	notes       Notes
}

// MaxInstructions is the most of a server's instructions that an entry
// keeps, in bytes: longer ones are cut between words (see [About]). It
// bounds the file whatever the server sends; instructions are a few
// paragraphs, and what the cache keeps them for (tool search's server
// context, a line that says what the server is for) reads their start.
const MaxInstructions = 8 << 10

// MaxInfoField is the most of each string of a server's serverInfo (its
// name, title, description, version and website URL) that an entry keeps,
// in bytes: longer ones are cut between words. Tool search reads at most
// 256 bytes of each.
const MaxInfoField = 1 << 10

// About is what a server said of itself when it connected, kept with its
// tools, so that while it is shown from the cache it is described as when
// it is connected: its serverInfo (without icons) and its instructions.
// [Cache.Store] cuts Instructions to [MaxInstructions] and each string of
// ServerInfo to [MaxInfoField], between words, and a read cuts what a file
// holds likewise.
type About struct {
	// ServerInfo is the implementation the server reported; nil if none,
	// or if the entry was written by a version that did not keep it.
	ServerInfo *mcp.Implementation
	// Instructions are the server's initialize instructions; "" if none.
	Instructions string
}

// Entry is what the cache keeps of a server for one config (fingerprint).
type Entry struct {
	// Tools are the cached tools; nil on a miss (see [Cache.Get]).
	Tools []*mcp.Tool
	// SavedAt is when they were fetched; zero on a miss.
	SavedAt time.Time
	// About is what the server said of itself with those tools; zero on a
	// miss.
	About About
	// Notes are the entry's notes, which a miss may have too.
	Notes Notes
}

// Notes are what the cache keeps of a server besides its tools, for one
// config (fingerprint): what a process that starts the server again, with
// the same config, need not find out again.
type Notes struct {
	// StdoutNoise reports that the server wrote lines on stdout that are
	// not JSON-RPC, and that a warning told of them.
	StdoutNoise bool
	// Failure is the error, redacted, with which the server failed to
	// connect when it was last started, before it listed any tool; ""
	// if it did not fail, or listed its tools since. FailedAt is when.
	Failure  string
	FailedAt time.Time
}

// errCorrupt marks a file that exists but is not a well-formed cache file.
var errCorrupt = errors.New("corrupt cache file")

// Get returns the cached tools of server for fingerprint, and the time at
// which they were fetched. ok is false on any miss: no entry, a corrupt file,
// another fingerprint, an expired entry or an empty list. Get never returns
// an error; corrupt files are logged at warn level.
//
// Get reads the file on every call, so the tools it returns are the caller's
// own to change.
func (c *Cache) Get(server, fingerprint string) (tools []*mcp.Tool, savedAt time.Time, ok bool) {
	tools, savedAt, _ = c.Lookup(server, fingerprint)
	return tools, savedAt, tools != nil
}

// Lookup is Get and Notes from one read of the entry: its tools (nil on a
// miss) and when they were fetched, and its notes.
func (c *Cache) Lookup(server, fingerprint string) (tools []*mcp.Tool, savedAt time.Time, notes Notes) {
	e := c.Read(server, fingerprint)
	return e.Tools, e.SavedAt, e.Notes
}

// Read returns all that one read of the entry of server for fingerprint
// gives: its tools, when they were fetched and what the server said of
// itself with them (all zero on a miss, as [Cache.Get] has them), and its
// notes (as [Cache.Notes] has them). Like Get, it never fails, and what it
// returns is the caller's own.
func (c *Cache) Read(server, fingerprint string) Entry {
	if c == nil || c.dir == "" {
		return Entry{}
	}
	path := c.path(server)
	f, err := readFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Entry{}
	case errors.Is(err, errCorrupt):
		c.logger.Warn("toolcache: ignoring corrupt entry", "server", server, "path", path, "err", err)
		return Entry{}
	case err != nil:
		c.logger.Warn("toolcache: ignoring unreadable entry", "server", server, "path", path, "err", err)
		return Entry{}
	case f.server != server:
		c.logger.Warn("toolcache: ignoring entry of another server", "server", server, "path", path)
		return Entry{}
	case f.fingerprint != fingerprint:
		c.logger.Debug("toolcache: config changed", "server", server)
		return Entry{}
	}
	notes := f.notes
	if !c.now().Before(notes.FailedAt.Add(c.ttl)) {
		notes.Failure, notes.FailedAt = "", time.Time{}
	}
	switch {
	case len(f.tools) == 0:
		return Entry{Notes: notes}
	case !c.now().Before(f.savedAt.Add(c.ttl)):
		c.logger.Debug("toolcache: entry expired", "server", server, "savedAt", f.savedAt)
		return Entry{Notes: notes}
	}
	return Entry{Tools: f.tools, SavedAt: f.savedAt, About: f.about, Notes: notes}
}

// Put is [Cache.Store] with no [About]: the entry keeps no serverInfo or
// instructions.
func (c *Cache) Put(server, fingerprint string, tools []*mcp.Tool, fetchedAt time.Time, redact func(string) string) error {
	return c.Store(server, fingerprint, tools, About{}, fetchedAt, redact)
}

// Store stores tools for server under fingerprint, as fetched at fetchedAt
// (a zero fetchedAt means now), with about, what the server said of itself
// (cut as About tells). It applies redact, which may be nil, to every
// string of the tools and of about before writing them; nil tools are
// dropped.
//
// Put skips the write and returns nil when a newer list is stored, or was
// stored or removed through this Cache. An empty list stores nothing: it
// removes the server's entry instead, unless that entry is newer.
//
// The write is atomic. It is best-effort: the caller may ignore the error,
// and a failed write leaves the previous entry intact.
func (c *Cache) Store(server, fingerprint string, tools []*mcp.Tool, about About, fetchedAt time.Time, redact func(string) string) error {
	if c == nil || c.dir == "" {
		return nil
	}
	if fetchedAt.IsZero() {
		fetchedAt = c.now()
	}
	fetchedAt = fetchedAt.Round(0).UTC()

	values, err := redactTools(tools, redact)
	if err != nil {
		return fmt.Errorf("toolcache: put %q: %w", server, err)
	}
	s := c.serverLock(server)
	s.mu.Lock()
	defer s.mu.Unlock()

	path := c.path(server)
	if s.latest.After(fetchedAt) {
		c.logger.Debug("toolcache: skipping stale write", "server", server, "fetchedAt", fetchedAt, "newer", s.latest)
		return nil
	}
	// A list says the server connected: of the notes, only the noise
	// stays.
	var notes Notes
	if f, err := readFile(path); err == nil && f.server == server {
		if f.savedAt.After(fetchedAt) {
			c.logger.Debug("toolcache: skipping stale write", "server", server, "fetchedAt", fetchedAt, "newer", f.savedAt)
			return nil
		}
		notes.StdoutNoise = f.notes.StdoutNoise && f.fingerprint == fingerprint
	}
	var data []byte
	if len(values) > 0 {
		data, err = marshalEntry(server, fingerprint, fetchedAt, values, redactAbout(about, redact), notes)
		if err != nil {
			return fmt.Errorf("toolcache: put %q: %w", server, err)
		}
	}

	if data == nil {
		if err := removeFile(path); err != nil {
			return fmt.Errorf("toolcache: put %q: %w", server, err)
		}
	} else if err := c.writeFile(path, data); err != nil {
		return fmt.Errorf("toolcache: put %q: %w", server, err)
	}
	s.latest = fetchedAt
	return nil
}

// Notes returns the notes of the entry of server for fingerprint: none if
// it has no entry for fingerprint. A failure older than the cache's time to
// live is forgotten.
func (c *Cache) Notes(server, fingerprint string) Notes {
	_, _, notes := c.Lookup(server, fingerprint)
	return notes
}

// ReportNoise records, in the entry of server for fingerprint, that a
// warning told of the lines the server wrote on stdout that are not
// JSON-RPC. The entry keeps its tools, if it has any for fingerprint.
func (c *Cache) ReportNoise(server, fingerprint string) error {
	return c.note(server, fingerprint, "report noise", func(n *Notes) { n.StdoutNoise = true })
}

// ReportFailure records, in the entry of server for fingerprint, that the
// server failed to connect at at with the error text msg, which must be
// redacted already: until it lists its tools ([Cache.Put]), a process that
// starts it with the same config knows that it may fail again.
func (c *Cache) ReportFailure(server, fingerprint, msg string, at time.Time) error {
	at = at.Round(0).UTC()
	return c.note(server, fingerprint, "report failure", func(n *Notes) { n.Failure, n.FailedAt = msg, at })
}

// note rewrites the entry of server with its notes changed by change: the
// entry of fingerprint, with its tools, or a new one without tools, which
// Get does not return.
func (c *Cache) note(server, fingerprint, op string, change func(*Notes)) error {
	if c == nil || c.dir == "" {
		return nil
	}
	s := c.serverLock(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	path := c.path(server)
	f, err := readFile(path)
	if err != nil || f.server != server || f.fingerprint != fingerprint {
		f = &file{fingerprint: fingerprint, server: server}
	}
	notes := f.notes
	change(&notes)
	if notes == f.notes {
		return nil
	}
	values, err := redactTools(f.tools, nil)
	if err == nil {
		var data []byte
		if data, err = marshalEntry(server, fingerprint, f.savedAt, values, f.about, notes); err == nil {
			err = c.writeFile(path, data)
		}
	}
	if err != nil {
		return fmt.Errorf("toolcache: %s of %q: %w", op, server, err)
	}
	return nil
}

// Remove deletes the server's entry, if any. It does not forget the fetch
// times seen by [Cache.Put], so a stale Put is still skipped afterwards.
func (c *Cache) Remove(server string) error {
	if c == nil || c.dir == "" {
		return nil
	}
	s := c.serverLock(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := removeFile(c.path(server)); err != nil {
		return fmt.Errorf("toolcache: remove %q: %w", server, err)
	}
	return nil
}

// serverLock returns the lock of server, creating it if needed.
func (c *Cache) serverLock(server string) *serverLock {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.servers[server]
	if !ok {
		s = new(serverLock)
		c.servers[server] = s
	}
	return s
}

// path returns the file of server: the hex SHA-256 of its name plus ".json",
// which is safe whatever the name is.
func (c *Cache) path(server string) string {
	sum := sha256.Sum256([]byte(server))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:])+".json")
}

// marshalEntry returns the file contents for an entry.
func marshalEntry(server, fingerprint string, savedAt time.Time, tools []any, about About, notes Notes) ([]byte, error) {
	v := struct {
		Version      int         `json:"version"`
		Fingerprint  string      `json:"fingerprint"`
		Server       string      `json:"server"`
		SavedAt      string      `json:"savedAt"`
		Tools        []any       `json:"tools"`
		ServerInfo   *serverInfo `json:"serverInfo,omitempty"`
		Instructions string      `json:"instructions,omitempty"`
		StdoutNoise  bool        `json:"stdoutNoise,omitempty"`
		Failure      *failure    `json:"failure,omitempty"`
	}{Version: Version, Fingerprint: fingerprint, Server: server, SavedAt: savedAt.Format(time.RFC3339Nano), Tools: tools,
		Instructions: about.Instructions, StdoutNoise: notes.StdoutNoise}
	if i := about.ServerInfo; i != nil {
		v.ServerInfo = &serverInfo{Name: i.Name, Title: i.Title, Description: i.Description, Version: i.Version, WebsiteURL: i.WebsiteURL}
	}
	if notes.Failure != "" {
		v.Failure = &failure{notes.Failure, notes.FailedAt}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// readFile reads and decodes the cache file at path. The error wraps
// [fs.ErrNotExist] if there is no file, and errCorrupt if the file is not a
// well-formed cache file. It does not check the server, the fingerprint, the
// age or the number of tools.
func readFile(path string) (*file, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	switch {
	case e.Version == nil:
		return nil, fmt.Errorf("%w: no version", errCorrupt)
	case *e.Version != Version:
		return nil, fmt.Errorf("%w: version %d, want %d", errCorrupt, *e.Version, Version)
	case e.Fingerprint == nil:
		return nil, fmt.Errorf("%w: no fingerprint", errCorrupt)
	case e.Server == nil:
		return nil, fmt.Errorf("%w: no server", errCorrupt)
	case e.SavedAt == nil:
		return nil, fmt.Errorf("%w: no savedAt", errCorrupt)
	case !bytes.HasPrefix(e.Tools, []byte("[")):
		return nil, fmt.Errorf("%w: tools is not an array", errCorrupt)
	}
	notes := Notes{StdoutNoise: e.StdoutNoise}
	if e.Failure != nil {
		notes.Failure, notes.FailedAt = e.Failure.Error, e.Failure.At.UTC()
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(e.Tools, &tools); err != nil {
		return nil, fmt.Errorf("%w: tools: %w", errCorrupt, err)
	}
	for i, t := range tools {
		if t == nil || t.Name == "" {
			return nil, fmt.Errorf("%w: tool %d has no name", errCorrupt, i)
		}
	}
	about := About{Instructions: e.Instructions}
	if i := e.ServerInfo; i != nil {
		about.ServerInfo = &mcp.Implementation{Name: i.Name, Title: i.Title, Description: i.Description, Version: i.Version, WebsiteURL: i.WebsiteURL}
	}
	return &file{
		fingerprint: *e.Fingerprint,
		server:      *e.Server,
		savedAt:     e.SavedAt.UTC(),
		tools:       tools,
		about:       boundAbout(about),
		notes:       notes,
	}, nil
}

// writeFile atomically replaces path with data (see userfile.Replace).
func (c *Cache) writeFile(path string, data []byte) error {
	return userfile.Replace(path, data, c.beforeRename)
}

// removeFile removes path; a missing file is not an error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
