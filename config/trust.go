package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/shell"

	"github.com/switchboard-mcp/switchboard/internal/userfile"
)

// ProjectFile is the name of the project file that [Load] discovers in
// its directory.
const ProjectFile = ".mcp.json"

// A TrustStore records the project files that a user trusts, each by its
// absolute path and the SHA-256 of its content, in one JSON file.
//
// A project file is code from whoever wrote the repository it is in: its
// servers are commands to run, and its ${VAR}s send the user's environment
// where it says. So [Load] uses the project file it discovers only once the
// user has trusted it as it is now ([TrustStore.Trust]); a file that
// changed needs trusting again. Files named in [LoadOptions.Paths], the
// user file and the embedded default need no trust.
//
// The methods of a TrustStore are safe for concurrent use by readers; two
// processes that trust files at the same moment may lose one of the two.
type TrustStore struct {
	// File is the JSON file of trusted files. "" trusts nothing: there is
	// no state directory to keep it in.
	File string
}

// DefaultTrustStore returns the trust store at switchboard/trust.json
// under $XDG_STATE_HOME, or under ~/.local/state, where ~ is $HOME, or
// without it $USERPROFILE (as Windows has): the home the user file is found
// in, beside the OAuth tokens. lookupEnv reads the environment; nil means
// os.LookupEnv.
func DefaultTrustStore(lookupEnv func(string) (string, bool)) *TrustStore {
	dir, err := userfile.StateDir(lookupEnv)
	if err != nil {
		return &TrustStore{}
	}
	return &TrustStore{File: filepath.Join(dir, "trust.json")}
}

// trustFile is the content of a trust store.
type trustFile struct {
	// Files maps the absolute path of each trusted file to its record.
	Files map[string]trustRecord `json:"files"`
}

type trustRecord struct {
	SHA256    string    `json:"sha256"`
	TrustedAt time.Time `json:"trustedAt"`
}

// An UntrustedError is a project file that [Load] ignored, since the user
// has not trusted it as it is now. Load puts it in [Config.Warnings].
type UntrustedError struct {
	File    string // The absolute path of the project file.
	Changed bool   // The file was trusted once, with other content.
	Err     error  // Why the trust store could not be read, if that is why.
}

func (e *UntrustedError) Error() string {
	why := "not trusted"
	switch {
	case e.Err != nil:
		why = fmt.Sprintf("not trusted (%v)", e.Err)
	case e.Changed:
		why = "changed since it was trusted"
	}
	return fmt.Sprintf("%s: project file %s; its servers are ignored; to trust it as it is now, run: switchboard trust %s",
		e.File, why, shell.Quote(e.File))
}

func (e *UntrustedError) Unwrap() error { return e.Err }

// check returns nil if the file at path, whose content is data, is
// trusted as it is, else an *UntrustedError.
func (s *TrustStore) check(path string, data []byte) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return &UntrustedError{File: path, Err: err}
	}
	if s.File == "" {
		return &UntrustedError{File: abs, Err: errors.New("no state directory to keep trust in: neither HOME nor USERPROFILE is set")}
	}
	f, err := s.read()
	if err != nil {
		return &UntrustedError{File: abs, Err: err}
	}
	r, ok := f.Files[abs]
	switch {
	case !ok:
		return &UntrustedError{File: abs}
	case r.SHA256 != hash(data):
		return &UntrustedError{File: abs, Changed: true}
	}
	return nil
}

// Trust records that the config file at path is trusted as it is now, and
// returns it parsed, to show what it runs. A file that does not read or
// parse is refused, with an [*Error].
func (s *TrustStore) Trust(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("trust %s: %w", path, err)
	}
	data, err := readFile(abs)
	if err != nil {
		return nil, err
	}
	cfg, err := Parse(abs, data)
	if err != nil {
		return nil, err
	}
	if s.File == "" {
		return nil, errors.New("trust: no state directory to keep trust in: neither HOME nor USERPROFILE is set")
	}
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	f.Files[abs] = trustRecord{SHA256: hash(data), TrustedAt: time.Now().UTC()}
	if err := s.write(f); err != nil {
		return nil, fmt.Errorf("trust store %s: %w", s.File, err)
	}
	return cfg, nil
}

// read reads the store; a missing one holds nothing.
func (s *TrustStore) read() (*trustFile, error) {
	f := &trustFile{}
	data, err := readFile(s.File)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("trust store: %w", err)
	default:
		if err := json.Unmarshal(data, f); err != nil {
			return nil, fmt.Errorf("trust store %s: not valid JSON (%v); remove it, and trust the files again", s.File, err)
		}
	}
	if f.Files == nil {
		f.Files = make(map[string]trustRecord)
	}
	return f, nil
}

// write replaces the store with f atomically, readable by its owner alone.
func (s *TrustStore) write(f *trustFile) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return userfile.Replace(s.File, append(data, '\n'), nil)
}

// hash is the hex SHA-256 of data.
func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
