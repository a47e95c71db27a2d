package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/switchboard-mcp/switchboard/internal/userfile"
)

// PinningMode is how tool pinning treats a tool whose definition differs
// from its pin, or that is new on a server that has pins (see
// design §2 "Tool pinning").
type PinningMode string

// The modes of tool pinning.
const (
	// PinningOff pins nothing and holds nothing.
	PinningOff PinningMode = "off"
	// PinningWarn pins, and logs, counts and shows each change; the tool
	// stays usable.
	PinningWarn PinningMode = "warn"
	// PinningEnforce holds a changed or new tool until a person approves
	// it.
	PinningEnforce PinningMode = "enforce"
)

// ParsePinningMode reads "off", "warn" or "enforce".
func ParsePinningMode(s string) (PinningMode, error) {
	switch m := PinningMode(s); m {
	case PinningOff, PinningWarn, PinningEnforce:
		return m, nil
	}
	return "", fmt.Errorf(`%w: %q; want "off", "warn" or "enforce"`, ErrPinning, s)
}

// Pinning is the top-level "pinning": a mode, or {"mode": M, "file": F}.
// It comes whole from the file of highest precedence that sets it.
type Pinning struct {
	// Mode is "" when no file sets it: the host's default applies
	// (switchboard serve's is warn; the library's off).
	Mode PinningMode
	// File is the pins file, made absolute against the directory of the
	// config file that names it; "" for the default, in the user's state
	// directory.
	File string
}

// ErrPinning means "pinning" (top-level, or a server's) is invalid. It
// fails the whole file at the top level, and the server for a server's: a
// mistyped "enforce" must not leave tools unguarded.
var ErrPinning = errors.New("invalid pinning setting")

// pinning reads a top-level "pinning" of the config file file; on error,
// field is the part below "pinning" that is bad.
func pinning(file string, v *hujson.Value) (_ Pinning, field string, _ error) {
	if lit, ok := literal(v); ok && lit.Kind() == '"' {
		mode, err := ParsePinningMode(lit.String())
		return Pinning{Mode: mode}, "", err
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return Pinning{}, "", fmt.Errorf(`%w: want "off", "warn" or "enforce", or an object with "mode" and "file"`, ErrPinning)
	}
	var p Pinning
	for i := range obj.Members {
		m := &obj.Members[i]
		lit, isLit := literal(&m.Value)
		switch name := memberName(m); name {
		case "mode":
			if !isLit || lit.Kind() != '"' {
				return Pinning{}, name, fmt.Errorf(`%w: want "off", "warn" or "enforce"`, ErrPinning)
			}
			mode, err := ParsePinningMode(lit.String())
			if err != nil {
				return Pinning{}, name, err
			}
			p.Mode = mode
		case "file":
			if !isLit || lit.Kind() != '"' || lit.String() == "" {
				return Pinning{}, name, fmt.Errorf("%w: want the pins file's path", ErrPinning)
			}
			p.File = lit.String()
			if !filepath.IsAbs(p.File) && file != EmbeddedSource {
				p.File = filepath.Join(filepath.Dir(file), p.File)
				if abs, err := filepath.Abs(p.File); err == nil {
					p.File = abs // a config named by a relative path
				}
			}
		default:
			return Pinning{}, name, fmt.Errorf(`%w: unknown field; want "mode" or "file"`, ErrPinning)
		}
	}
	if p.Mode == "" {
		return Pinning{}, "mode", fmt.Errorf(`%w: missing; want "off", "warn" or "enforce"`, ErrPinning)
	}
	return p, "", nil
}

// PinsFile returns the pins file of c: its "pinning" file if a config file
// names one, else fallback if not "", else the default, a file under the
// user's state directory (switchboard/pins) named after c's config files,
// so that each config has its own pins. lookupEnv reads the environment;
// nil means os.LookupEnv.
func (c *Config) PinsFile(fallback string, lookupEnv func(string) (string, bool)) (string, error) {
	switch {
	case c.Pinning.File != "":
		return c.Pinning.File, nil
	case fallback != "":
		return fallback, nil
	}
	dir, err := userfile.StateDir(lookupEnv)
	if err != nil {
		return "", fmt.Errorf("pins file: %w", err)
	}
	return filepath.Join(dir, "pins", pinsFileName(c.Files)), nil
}

// pinsFileName names the default pins file of a config read from files:
// the base name of the first, for people, and a hash of them all, for
// uniqueness ("mcp-3f2a9c0d1e2b.json"). A config from no file (built in
// code) shares "default.json".
func pinsFileName(files []string) string {
	if len(files) == 0 {
		return "default.json"
	}
	h := sha256.New()
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil && f != EmbeddedSource {
			f = abs
		}
		h.Write([]byte(f + "\n"))
	}
	stem := strings.TrimSuffix(filepath.Base(files[0]), filepath.Ext(files[0]))
	if files[0] == EmbeddedSource {
		stem = "embedded"
	}
	stem = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, strings.TrimLeft(stem, "."))
	if stem == "" {
		stem = "config"
	}
	return fmt.Sprintf("%s-%x.json", stem, h.Sum(nil)[:6])
}
