package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-mcp/switchboard/config"
)

// trust records that a project file, ./.mcp.json unless FILE is given, is
// trusted as it is now, so that discovery uses it, and says what its
// servers run.
func (e *env) trust(args []string) error {
	fs := e.flags("trust", `[FILE]

Trust the project file FILE (./.mcp.json unless given) as it is now: its
servers run commands and send headers as it says, so discovery ignores it
until it is trusted, and again once it changes. The trust is its absolute
path and SHA-256, kept in switchboard/trust.json under $XDG_STATE_HOME
(else ~/.local/state). Files named with --config need no trust.`)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErrorf("trust: want at most one FILE, got %d arguments", fs.NArg())
	}
	path := config.ProjectFile
	if fs.NArg() == 1 {
		path = fs.Arg(0)
	}
	store := config.DefaultTrustStore(nil)
	cfg, err := store.Trust(path)
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	fmt.Fprintf(e.stdout, "trusted %s as it is now (in %s); a change needs trusting again\n", printableLine(cfg.Files[0]), store.File)
	for _, s := range cfg.Servers {
		if s.IsEnabled() {
			fmt.Fprintf(e.stdout, "  %s: %s\n", printableLine(s.Name), printableLine(entryAction(s)))
		}
	}
	return nil
}

// entryAction says what a server entry runs or connects to, unresolved: its
// ${VAR}s are shown as written, and named once more at the end, with what
// else of the environment it is given, for they are what it sends.
func entryAction(s config.Server) string {
	action := "connects to " + s.DisplayURL()
	if s.TransportType() == config.Stdio {
		words := append([]string{s.Command}, s.Args...)
		for i, w := range words {
			if w == "" || strings.ContainsAny(w, " \t\n\"'\\$`") {
				words[i] = strconv.Quote(w) // where one word ends shows
			}
		}
		action = "runs " + strings.Join(words, " ")
	}
	var given []string
	// The lookup reads no value: it notes the names.
	s.Resolve(func(name string) (string, bool) {
		if name = "$" + name; !slices.Contains(given, name) {
			given = append(given, name)
		}
		return "x", true
	})
	if s.InheritEnv {
		given = append(given, "your whole environment (inheritEnv)")
	}
	if len(given) > 0 {
		action += ", given " + strings.Join(given, ", ")
	}
	return action
}
