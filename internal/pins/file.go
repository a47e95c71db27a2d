package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/internal/userfile"
)

// Version is the version of the pins file that this package reads and
// writes.
const Version = 1

// ErrCorrupt means that a pins file is not a pins file this package can
// read: not JSON, not of the expected shape, or without a version.
var ErrCorrupt = errors.New("pins file is corrupt")

// ErrNewerVersion means that a pins file was written by a newer version of
// Switchboard.
var ErrNewerVersion = errors.New("pins file is of a newer version")

// File is the content of a pins file. It is not safe for concurrent use.
type File struct {
	Version int                `json:"version"`
	Servers map[string]*Server `json:"servers"`

	// quick remembers, for the tools [File.Check] found pinned, the hash
	// of their plain JSON encoding, so that the next check of the same
	// definition skips canonicalising it. It holds at most one entry for
	// each pinned tool.
	quick map[quickKey]quickEntry
}

// Server is the pins of one server's tools, by the name the server gives
// each.
type Server struct {
	Tools map[string]Entry `json:"tools"`
}

// Entry is the pin of one tool.
type Entry struct {
	Definition Definition `json:"definition"`
	Pin        string     `json:"pin"`
	// PinnedAt is when the tool was pinned, in UTC to the second.
	PinnedAt time.Time `json:"pinnedAt"`
}

// New returns an empty pins file.
func New() *File { return &File{Version: Version, Servers: map[string]*Server{}} }

// Lookup returns the pin of server's tool.
func (f *File) Lookup(server, tool string) (Entry, bool) {
	s := f.Servers[server]
	if s == nil {
		return Entry{}, false
	}
	e, ok := s.Tools[tool]
	return e, ok
}

// Set pins t as server's tool, at now. A tool over the limits is not
// pinned: the error names it, and the file is unchanged.
func (f *File) Set(server string, t *mcp.Tool, now time.Time) error {
	d, pin, err := NewDefinition(t)
	if err != nil {
		return fmt.Errorf("server %q: %w", server, err)
	}
	s := f.Servers[server]
	if s == nil {
		s = &Server{Tools: map[string]Entry{}}
		f.Servers[server] = s
	}
	s.Tools[t.Name] = Entry{Definition: d, Pin: pin, PinnedAt: now.UTC().Truncate(time.Second)}
	return nil
}

var pinPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Load reads the pins file at path. A missing file is an empty [File]; a
// file that cannot be read, is not a pins file or is of a newer version is
// an error naming it, wrapping [ErrCorrupt] or [ErrNewerVersion] for the
// last two.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("pins file: %w", err) // *PathError names the file
	}
	return Parse(path, b)
}

// Parse reads b, the content of the pins file at path (which errors name),
// as [Load] does.
func Parse(path string, b []byte) (*File, error) {
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("pins file %s: %w: %s", path, ErrCorrupt, jsonProblem(b, err))
	}
	switch {
	case v.Version == nil:
		return nil, fmt.Errorf("pins file %s: %w: no version", path, ErrCorrupt)
	case *v.Version > Version:
		return nil, fmt.Errorf("pins file %s: %w: version %d, this Switchboard reads %d", path, ErrNewerVersion, *v.Version, Version)
	case *v.Version < Version:
		return nil, fmt.Errorf("pins file %s: %w: version %d", path, ErrCorrupt, *v.Version)
	}
	f := New()
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("pins file %s: %w: %s", path, ErrCorrupt, jsonProblem(b, err))
	}
	if f.Servers == nil {
		f.Servers = map[string]*Server{}
	}
	for name, s := range f.Servers {
		if s == nil {
			return nil, fmt.Errorf("pins file %s: %w: server %q is null", path, ErrCorrupt, name)
		}
		if s.Tools == nil {
			s.Tools = map[string]Entry{}
		}
		for tool, e := range s.Tools {
			if !pinPattern.MatchString(e.Pin) {
				return nil, fmt.Errorf("pins file %s: %w: server %q, tool %q: pin is not a hex SHA-256", path, ErrCorrupt, name, tool)
			}
			// The file indents schemas; in memory they are compact, as
			// NewDefinition makes them.
			e.Definition.InputSchema = compact(e.Definition.InputSchema)
			e.Definition.OutputSchema = compact(e.Definition.OutputSchema)
			// A pin that is not its definition's was edited by hand (or
			// the definition was): which one a person approved is unknown.
			if pin, err := e.Definition.Pin(); err != nil || pin != e.Pin || e.Definition.Name != tool {
				return nil, fmt.Errorf("pins file %s: %w: server %q, tool %q: the pin is not the definition's (edited by hand?); approve the tool again",
					path, ErrCorrupt, name, tool)
			}
			s.Tools[tool] = e
		}
	}
	return f, nil
}

// compact removes the insignificant space from valid JSON b.
func compact(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return b
	}
	return c.Bytes()
}

// Encode returns f as the pins file holds it: indented JSON, map keys
// sorted, with a trailing newline.
func (f *File) Encode() ([]byte, error) {
	out := *f
	out.Version = Version
	if out.Servers == nil {
		out.Servers = map[string]*Server{}
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// prepareHook, if not nil, is called with the temporary file before it is
// written; tests make writes fail with it.
var prepareHook func(tmp string) error

// Save writes f to path atomically (a temporary file in the same
// directory, synced, then renamed over path; mode 0600), under the lock on
// path+".lock". Before it replaces a file that exists but is not a pins
// file of this version (corrupt, unreadable or newer), it keeps that file
// as path+".bak-<UTC time>".
func Save(path string, f *File) error {
	l, err := lockFile(path)
	if err != nil {
		return err
	}
	defer userfile.Unlock(l)
	return save(path, f)
}

func save(path string, f *File) error {
	b, err := f.Encode()
	if err != nil {
		return fmt.Errorf("pins file %s: %w", path, err)
	}
	if err := backupUnreadable(path); err != nil {
		return err
	}
	if err := userfile.Replace(path, b, prepareHook); err != nil {
		return fmt.Errorf("pins file %s: %w", path, err)
	}
	return nil
}

// backupUnreadable keeps the file at path under a backup name when it
// exists and is not a pins file of this version.
func backupUnreadable(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		if _, err = Parse(path, b); err == nil {
			return nil
		}
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := 0; ; i++ {
		bak := path + ".bak-" + stamp
		if i > 0 {
			bak = fmt.Sprintf("%s-%d", bak, i)
		}
		// A hard link keeps the content without reading it (the file may
		// be unreadable) and leaves path in place until the rename.
		lerr := os.Link(path, bak)
		if lerr == nil {
			return nil
		}
		if errors.Is(lerr, fs.ErrExist) && i < 100 {
			continue
		}
		if b == nil {
			return fmt.Errorf("pins file %s: not overwritten, as no backup could be made: %w", path, lerr)
		}
		// No hard links here: copy what could be read.
		if err := userfile.Replace(bak, b, nil); err != nil {
			return fmt.Errorf("pins file %s: not overwritten, as no backup could be made: %w", path, err)
		}
		return nil
	}
}

// Update applies fn to the pins file at path and saves the result, under an
// exclusive lock on path+".lock", so that concurrent updates by several
// processes (or goroutines) all land. A file that cannot be read is an
// error and fn is not called; an error from fn leaves the file unchanged.
// The lock blocks until it is free: fn must not wait on another update of
// the same file.
func Update(path string, fn func(*File) error) error {
	l, err := lockFile(path)
	if err != nil {
		return err
	}
	defer userfile.Unlock(l)
	f, err := Load(path)
	if err != nil {
		return err
	}
	before, err := f.Encode()
	if err != nil {
		return fmt.Errorf("pins file %s: %w", path, err)
	}
	if err := fn(f); err != nil {
		return err
	}
	after, err := f.Encode()
	if err != nil {
		return fmt.Errorf("pins file %s: %w", path, err)
	}
	if bytes.Equal(before, after) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	return save(path, f)
}

// jsonProblem says what is wrong with the JSON b, as err tells it, in words
// for a person who edits the file: where, by line and column, and what was
// expected, not Go's type names.
func jsonProblem(b []byte, err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		line, col := position(b, syntax.Offset-1) // the offset is past the bad byte
		return fmt.Sprintf("line %d, column %d: %v", line, col, err)
	case errors.As(err, &typ):
		line, col := position(b, typ.Offset)
		field := strings.TrimPrefix(typ.Field, ".")
		return fmt.Sprintf("line %d, column %d: %s: want %s, not a JSON %s", line, col, field, kindOf(typ.Type.Kind().String()), typ.Value)
	}
	return err.Error()
}

// kindOf names a Go kind as JSON does.
func kindOf(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case kind == "slice" || kind == "array":
		return "an array"
	}
	return "an object"
}

// position returns the line and column (from 1) of byte offset in b.
func position(b []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(b)))
	before := b[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// lockFile takes the pins file at path for this caller alone, waiting for
// it, with a lock on path+".lock", made with its directory if need be.
func lockFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("pins file %s: %w", path, err)
	}
	l, err := userfile.Lock(path+".lock", true)
	if err != nil {
		return nil, fmt.Errorf("pins file %s: %w", path, err)
	}
	return l, nil
}
