package config

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// LoadOptions configures [Load]. The zero value discovers the usual files.
type LoadOptions struct {
	// Paths are explicit files (--config, repeatable), lowest precedence
	// first. Empty means discovery.
	Paths []string
	// Dir is the directory of the project file ./.mcp.json; "" means ".".
	Dir string
	// LookupEnv reads XDG_CONFIG_HOME, XDG_STATE_HOME (for the default
	// Trust), HOME (or, without it, USERPROFILE, as on Windows) and
	// SWITCHBOARD_TIMEOUT_MS;
	// nil means os.LookupEnv. It is never used for ${VAR}: see
	// [Server.Resolve].
	LookupEnv func(string) (string, bool)
	// Executable is the path of the running switchboard binary, which the
	// embedded default runs; "" means "switchboard".
	Executable string
	// Trust holds the project files the user trusts; nil means
	// [DefaultTrustStore] with LookupEnv. Discovery uses the project file
	// only if it is trusted as it is now.
	Trust *TrustStore
}

// TimeoutEnv names the environment variable that overrides the timeout of
// every server, in milliseconds; 0 disables timeouts.
const TimeoutEnv = "SWITCHBOARD_TIMEOUT_MS"

// Load reads and merges config files. It never returns a nil Config.
//
// With opts.Paths, it reads each file in order. Without, it discovers the user
// file $XDG_CONFIG_HOME/switchboard/mcp.json (XDG_CONFIG_HOME defaults to
// $HOME/.config, and HOME to USERPROFILE, which Windows sets instead), then
// the project file .mcp.json in opts.Dir, skipping those that do not exist;
// when neither exists, the config is [Default]. An entry in a later file
// replaces an entry with the same name in an earlier one, whole, and keeps its
// place in the order.
//
// A discovered project file that the user has not trusted as it is now (see
// [TrustStore]) is ignored, with an [*UntrustedError] in [Config.Warnings];
// it still counts as found, so the default does not start in its place.
//
// Each file must be a regular file (after symbolic links) of at most
// [MaxFileSize] bytes. Problems with a file as a whole are returned joined,
// each an [*Error], next to the Config from the other files. Problems with
// an entry never make Load fail: they are in [Config.Rejected].
func Load(opts *LoadOptions) (*Config, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Trust == nil {
		o.Trust = DefaultTrustStore(o.LookupEnv)
	}

	cfg := &Config{}
	var m merger
	var errs []error
	// read reads one file; a project file must be trusted as it is.
	read := func(path string, mustExist, project bool) (found bool) {
		data, err := readFile(path)
		if err != nil {
			if !mustExist && errors.Is(err, fs.ErrNotExist) {
				return false
			}
			if project {
				// A repository's file that cannot be read (a FIFO, a
				// link to /dev/zero) is ignored as an untrusted one is:
				// it must not stop every verb in the repository.
				cfg.Warnings = append(cfg.Warnings, fmt.Errorf("%w; it is ignored", err))
				return true
			}
			errs = append(errs, err)
			return true
		}
		if project {
			if err := o.Trust.check(path, data); err != nil {
				cfg.Warnings = append(cfg.Warnings, err)
				return true
			}
		}
		cfg.Files = append(cfg.Files, path)
		parsed, warnings, err := parse(path, data)
		cfg.Warnings = append(cfg.Warnings, warnings...)
		if err != nil {
			errs = append(errs, err)
		}
		parsed.mergeInto(&m, cfg)
		return true
	}

	if len(o.Paths) > 0 {
		for _, p := range o.Paths {
			read(p, true, false)
		}
	} else {
		found := false
		if p := userFile(o.LookupEnv); p != "" {
			found = read(p, false, false)
		}
		found = read(projectFile(o.Dir), false, true) || found
		if !found {
			def := Default(o.Executable)
			cfg.Files = def.Files
			for i := range def.Servers {
				m.put(item{name: def.Servers[i].Name, server: &def.Servers[i]})
			}
		}
	}
	m.fill(cfg)

	if v, ok := o.LookupEnv(TimeoutEnv); ok && v != "" {
		if ms, ok := parseMillis(v); ok {
			for i := range cfg.Servers {
				cfg.Servers[i].Timeout = clonePtr(&ms)
			}
		} else {
			cfg.Warnings = append(cfg.Warnings, fmt.Errorf("%s: invalid value %q (want a non-negative whole number of milliseconds); ignored", TimeoutEnv, v))
		}
	}
	return cfg, errors.Join(errs...)
}

// Files returns the files that Load with opts reads, or would read if they
// existed: the given paths, or the user file, ./.mcp.json and the trust
// store, which trusting the project file changes. A watcher of the config
// watches them.
func Files(opts *LoadOptions) []string {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	if len(o.Paths) > 0 {
		return append([]string(nil), o.Paths...)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	var files []string
	if p := userFile(o.LookupEnv); p != "" {
		files = append(files, p)
	}
	files = append(files, projectFile(o.Dir))
	if o.Trust == nil {
		o.Trust = DefaultTrustStore(o.LookupEnv)
	}
	if o.Trust.File != "" {
		files = append(files, o.Trust.File)
	}
	return files
}

// projectFile is the path of the project file in dir; "" means ".".
func projectFile(dir string) string {
	if dir == "" {
		dir = "."
	}
	return filepath.Join(dir, ProjectFile)
}

// userFile returns the path of the user config file, or "" without a home.
func userFile(lookup func(string) (string, bool)) string {
	// The XDG spec says to ignore a relative XDG_CONFIG_HOME.
	if x, _ := lookup("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "switchboard", "mcp.json")
	}
	for _, home := range []string{"HOME", "USERPROFILE"} {
		if h, _ := lookup(home); h != "" {
			return filepath.Join(h, ".config", "switchboard", "mcp.json")
		}
	}
	return ""
}

// parseMillis parses digits only: no sign, space, fraction or exponent.
func parseMillis(v string) (int64, bool) {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n <= maxTimeoutMillis
}

//go:embed default.jsonc
var defaultJSONC []byte

// Default returns the embedded default config: the servers "clock" and
// "notes", each running the built-in demo server. Their Source is
// [EmbeddedSource]. A non-empty executable replaces the command
// "switchboard", so that the default works when the binary is not on PATH.
func Default(executable string) *Config {
	cfg, err := Parse(EmbeddedSource, defaultJSONC)
	if err != nil || len(cfg.Rejected) > 0 || len(cfg.Warnings) > 0 {
		panic(fmt.Sprintf("config: embedded default is broken: %v %v", err, cfg))
	}
	if executable != "" {
		for i := range cfg.Servers {
			if cfg.Servers[i].Command == "switchboard" {
				cfg.Servers[i].Command = executable
			}
		}
	}
	return cfg
}
