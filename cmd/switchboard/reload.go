package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

// reloadQuiet is how long the config files must be still before a change
// is reloaded: an editor's save is often several writes, or a write and a
// rename.
const reloadQuiet = 200 * time.Millisecond

// watchConfig reloads the config into m on SIGHUP and whenever one of its
// files changes (written in place, or replaced by a rename), until ctx ends
// or stop is called. A config that does not load is refused with one log
// line that names the file and the problem; the running one stays. Each
// reload ends with a call of reloaded, with the config loaded (nil if none
// did) and its error if any.
//
// It follows the pins file (m.PinsFile) the same way: a change to it, or
// SIGHUP, has m read it again (Manager.ReloadPins), which releases the tools
// that a person approved, or holds those whose pins went away. After a
// config reload that names another pins file, it follows the new one. A
// pins file that cannot be read is the manager's to log, once; the gateway
// serves on.
func (e *env) watchConfig(ctx context.Context, paths []string, m *switchboard.Manager, logger *slog.Logger, reloaded func(*config.Config, error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	changed := make(chan struct{}, 1)
	pinsChanged := make(chan struct{}, 1)
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		hint := "SIGHUP reloads them"
		if runtime.GOOS == "windows" { // no SIGHUP there
			hint = "a change needs a restart"
		}
		logger.Warn("config files not watched; "+hint, "error", err)
	}
	// mu guards the following: the events' goroutine reads them, and a
	// reload that names another pins file changes them.
	var mu sync.Mutex
	files := make(map[string]os.FileInfo)
	configDirs := make(map[string]bool)
	// pinsFile is the pins file followed ("" for none); pinsInfo has it,
	// as it was last seen, if it is watched.
	var pinsFile string
	pinsInfo := make(map[string]os.FileInfo)
	// missing are the config directories that do not exist yet, each
	// watched through its nearest ancestor that does, until it appears.
	missing := make(map[string]bool)
	watchDir := func(dir string) (watched bool) {
		for d := dir; ; {
			err := watcher.Add(d)
			switch {
			case err == nil && d == dir:
				delete(missing, dir)
				return true
			case err == nil && exists(below(d, dir)):
				// Made after its own watch failed and before d's began,
				// which then told nothing of it: go down again.
				d = below(d, dir)
			case err == nil:
				missing[dir] = true
				return false
			case !errors.Is(err, fs.ErrNotExist) || filepath.Dir(d) == d:
				logger.Warn("directory of the config or the pins file not watched; SIGHUP reloads them", "dir", dir, "error", err)
				return false
			default:
				d = filepath.Dir(d)
			}
		}
	}
	if watcher != nil {
		// Watch the directories: an atomic save replaces the file, which a
		// watch of the file itself would lose.
		for _, f := range config.Files(&config.LoadOptions{Paths: paths}) {
			abs, err := filepath.Abs(f)
			if err != nil {
				continue
			}
			files[abs], _ = os.Stat(abs)
			if dir := filepath.Dir(abs); !configDirs[dir] {
				configDirs[dir] = true
				watchDir(dir)
			}
		}
	}
	// followPins follows the manager's pins file, if it is another one
	// than the file followed: its directory is watched instead (unless a
	// config file is there too). It reports whether it is another one.
	followPins := func() bool {
		path, _ := m.PinsFile()
		if path != "" {
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if path == pinsFile {
			return false
		}
		if old := filepath.Dir(pinsFile); pinsFile != "" && watcher != nil && !configDirs[old] && old != filepath.Dir(path) {
			if !missing[old] {
				_ = watcher.Remove(old) // it may be gone
			}
			delete(missing, old)
		}
		pinsFile = path
		clear(pinsInfo)
		if path != "" && watcher != nil {
			pinsInfo[path], _ = os.Stat(path)
			watchDir(filepath.Dir(path))
		}
		return true
	}
	followPins()
	// appeared watches the missing directories that an event created (or
	// created an ancestor of), and returns those that now are.
	appeared := func(ev fsnotify.Event) []string {
		if ev.Op&fsnotify.Create == 0 {
			return nil
		}
		var found []string
		for dir := range missing {
			if name := filepath.Clean(ev.Name); dir == name || strings.HasPrefix(dir, name+string(filepath.Separator)) {
				if watchDir(dir) {
					found = append(found, dir)
				}
			}
		}
		return found
	}
	// what tells whether ev changed the config, the pins file, or both.
	what := func(ev fsnotify.Event) (configHit, pinsHit bool) {
		mu.Lock()
		defer mu.Unlock()
		dirs := appeared(ev)
		configHit = changedFiles(files, ev) || slices.ContainsFunc(dirs, func(d string) bool { return configDirs[d] })
		pinsHit = changedFiles(pinsInfo, ev) || pinsFile != "" && slices.Contains(dirs, filepath.Dir(pinsFile))
		return configHit, pinsHit
	}
	var wg sync.WaitGroup
	if watcher != nil {
		wg.Go(func() {
			for {
				select {
				case ev, ok := <-watcher.Events:
					if !ok {
						return
					}
					configHit, pinsHit := what(ev)
					if configHit {
						signalOnce(changed)
					}
					if pinsHit {
						signalOnce(pinsChanged)
					}
				case err, ok := <-watcher.Errors:
					if !ok {
						return
					}
					logger.Warn("watching the config files", "error", err)
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Go(func() {
		quiet := time.NewTimer(reloadQuiet)
		quiet.Stop()
		pinsQuiet := time.NewTimer(reloadQuiet)
		pinsQuiet.Stop()
		for {
			select {
			case <-hup:
				e.reload(ctx, paths, m, logger, "SIGHUP", reloaded)
				followPins()
				_ = m.ReloadPins(ctx) // the manager logs a file it cannot read
			case <-changed:
				quiet.Reset(reloadQuiet)
			case <-quiet.C:
				e.reload(ctx, paths, m, logger, "file changed", reloaded)
				if followPins() {
					// The manager read the new file before it was watched.
					_ = m.ReloadPins(ctx)
				}
			case <-pinsChanged:
				pinsQuiet.Reset(reloadQuiet)
			case <-pinsQuiet.C:
				_ = m.ReloadPins(ctx) // the manager logs a file it cannot read
			case <-ctx.Done():
				return
			}
		}
	})
	return func() {
		signal.Stop(hup)
		cancel()
		if watcher != nil {
			watcher.Close()
		}
		wg.Wait()
	}
}

// changedFiles reports whether ev changed one of the watched files. An
// event names the file when it is written or replaced; but a file reached
// through a symbolic link whose target is swapped, as Kubernetes updates a
// mounted ConfigMap (it renames a new ..data link into place), changes with
// no event of its own, so any other event in the directory has the files
// compared with what they were. files is updated.
func changedFiles(files map[string]os.FileInfo, ev fsnotify.Event) bool {
	if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) == 0 {
		return false
	}
	name := filepath.Clean(ev.Name)
	if _, ok := files[name]; ok {
		files[name], _ = os.Stat(name)
		return true
	}
	changed := false
	for f, was := range files {
		if filepath.Dir(f) != filepath.Dir(name) {
			continue
		}
		now, _ := os.Stat(f)
		if !sameFile(was, now) {
			files[f] = now
			changed = true
		}
	}
	return changed
}

// sameFile reports whether a and b, either of which may be nil for a file
// that is missing, are the same unchanged file.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// signalOnce sends on c without blocking.
func signalOnce(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// reload loads the config and applies it to m, logging what changed, or
// why it was refused.
func (e *env) reload(ctx context.Context, paths []string, m *switchboard.Manager, logger *slog.Logger, why string, reloaded func(*config.Config, error)) {
	// Each outcome is told to reloaded (metrics, /status) before it is
	// logged: whoever reads the log line finds them telling it too.
	cfg, err := e.load(paths, true, logger, config.Chain{}) // the start checked the chain: see load
	if err != nil {
		reloaded(nil, &reloadError{refused: true, err: err})
		logger.Error("config not reloaded; the running config stays", "cause", why, "error", err)
		return
	}
	r, err := m.Reconfigure(ctx, cfg)
	var entries []error
	for _, k := range r.Kept {
		logger.Warn("config entry rejected; the server runs on as it was", "server", k.Name, "error", k.Err)
		entries = append(entries, k.Err)
	}
	for _, k := range r.Rejected {
		logger.Warn("config entry rejected", "server", k.Name, "error", k.Err)
		entries = append(entries, k.Err)
	}
	attrs := []any{"cause", why, "added", r.Added, "removed", r.Removed, "changed", r.Changed}
	switch {
	case err != nil:
		reloaded(cfg, err)
		logger.Warn("config reloaded, with errors", append(attrs, "error", err)...)
	case len(entries) > 0:
		reloaded(cfg, &reloadError{err: errors.Join(entries...)})
		logger.Info("config reloaded", attrs...)
	default:
		reloaded(cfg, nil)
		logger.Info("config reloaded", attrs...)
	}
}

// A reloadError is why a reload was refused, or which of its entries were.
type reloadError struct {
	refused bool // the config did not load: none of it applies
	err     error
}

func (e *reloadError) Error() string {
	if e.refused {
		return "refused; the running config stays: " + e.err.Error()
	}
	return "applied, but for rejected entries: " + e.err.Error()
}

func (e *reloadError) Unwrap() error { return e.err }

// reloadOutcome names the outcome of a reload that ended with err, for the
// metrics.
func reloadOutcome(err error) string {
	var re *reloadError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &re) && re.refused:
		return "refused"
	case errors.As(err, &re):
		return "rejected_entries"
	}
	return "error"
}

// below returns the directory just below ancestor on the way to dir.
func below(ancestor, dir string) string {
	for filepath.Dir(dir) != ancestor && filepath.Dir(dir) != dir {
		dir = filepath.Dir(dir)
	}
	return dir
}

// exists reports whether a file or directory is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
