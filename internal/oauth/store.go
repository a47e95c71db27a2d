// Package oauth logs Switchboard in to the MCP servers that require OAuth
// 2.1, and keeps their tokens fresh.
//
// The flow itself (discovery from the WWW-Authenticate challenge, client
// registration, authorization code with PKCE, resource indicators, scopes
// and step-up) is go-sdk's [auth.AuthorizationCodeHandler]. This package
// adds what a long-running gateway needs around it: a [Store] of tokens,
// one file per server, shared by the CLI and serve; a [Handler] that
// refreshes them before they expire and once on a 401, and that, without a
// usable token, fails with [ErrLoginRequired] instead of starting a login
// nobody is there to finish; and the interactive login of `switchboard
// login`, on a loopback redirect ([LoopbackLogin]).
package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/oauth2"

	"github.com/switchboard-mcp/switchboard/internal/userfile"
)

// A Record is what a login leaves for a server: the token, and what it
// takes to refresh it without the login's discovery.
type Record struct {
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"` // from dynamic registration; a configured client's stays in the config
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
}

// config is the oauth2 configuration that refreshes r's token.
func (r *Record) config() *oauth2.Config {
	return &oauth2.Config{ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: r.TokenURL, AuthStyle: r.AuthStyle}}
}

// A Store keeps one Record per server in a directory, each file written
// atomically and readable by its owner alone: mode 0600 on Unix, an ACL
// that grants only its owner and SYSTEM on Windows.
type Store struct {
	Dir string
}

// DefaultDir is the store's directory: switchboard/oauth under
// $XDG_STATE_HOME, or under ~/.local/state, where ~ is $HOME, or without
// it $USERPROFILE (as Windows has), the home the config file is found in.
func DefaultDir() (string, error) {
	dir, err := userfile.StateDir(nil)
	if err != nil {
		return "", fmt.Errorf("oauth: tokens: %w", err)
	}
	return filepath.Join(dir, "oauth"), nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Key names a server's record: its name, and a fingerprint of its URL, so
// that a server whose URL changes logs in again.
func Key(name, url string) string {
	sum := sha256.Sum256([]byte(url))
	return unsafeName.ReplaceAllString(name, "_") + "-" + hex.EncodeToString(sum[:6])
}

// A FileError is a token file that cannot be used, and how to fix it.
type FileError struct {
	Path    string
	Problem string
	Fix     string
	Err     error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("oauth: token file %s: %s; %s", e.Path, e.Problem, e.Fix)
}

func (e *FileError) Unwrap() error { return e.Err }

func (s *Store) path(key string) string { return filepath.Join(s.Dir, key+".json") }

// Load returns the record of key, or nil if there is none. A file that
// others may read (see private), or that is not a record, is refused, with
// the fix.
func (s *Store) Load(key, server string) (*Record, error) {
	path := s.path(key)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	defer f.Close()
	if err := private(f); err != nil {
		return nil, err
	}
	var r Record
	if err := json.NewDecoder(f).Decode(&r); err != nil || r.Token == nil || r.TokenURL == "" {
		if err == nil {
			err = errors.New("no token")
		}
		return nil, &FileError{Path: path, Problem: "not a token record", Err: err,
			Fix: fmt.Sprintf("run: switchboard logout %s && switchboard login %s", server, server)}
	}
	return &r, nil
}

// Save writes the record of key: to a temporary file in the directory,
// then renamed over the old one, so that a reader sees one or the other.
func (s *Store) Save(key string, r *Record) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if err := makePrivate(s.Dir); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if err := userfile.Replace(s.path(key), data, makePrivate); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	return nil
}

// Stamp identifies the record of key as stored now: it changes when a
// record is saved or deleted. It is "" when there is none.
func (s *Store) Stamp(key string) string {
	info, err := os.Stat(s.path(key))
	if err != nil {
		return ""
	}
	// Every save renames a new file into place: its identity (fileID)
	// tells two saves apart even within the file system's clock tick.
	return fmt.Sprintf("%s.%d.%d", fileID(info), info.ModTime().UnixNano(), info.Size())
}

// Forget deletes every record of the server called name, whatever its
// URL, and returns how many there were.
func (s *Store) Forget(name string) (int, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("oauth: %w", err)
	}
	own := regexp.MustCompile(`^` + regexp.QuoteMeta(unsafeName.ReplaceAllString(name, "_")) + `-[0-9a-f]{12}\.json$`)
	n := 0
	for _, e := range entries {
		if !own.MatchString(e.Name()) {
			continue
		}
		if _, err := s.Delete(strings.TrimSuffix(e.Name(), ".json")); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Delete forgets the record of key. It reports whether there was one.
func (s *Store) Delete(key string) (bool, error) {
	err := os.Remove(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("oauth: %w", err)
	}
	return true, nil
}
