// Command switchboard is a gateway that puts every configured MCP server
// behind one MCP endpoint (stdio or Streamable HTTP), with verbs to list,
// call and check them from the terminal.
//
// Usage:
//
//	switchboard serve   [--config F]... [--listen HOST:PORT | --stdio] [--stateless] [--allow-origin ORIGIN]...
//	                    [--auth-token-env NAME] [--insecure] [--startup-gate D] [--shutdown-timeout D]
//	                    [--tool-search off|on|auto[:N]] [--max-conns N]
//	switchboard tools   [--config F]... [--json] [--search QUERY [--limit N]] [--timeout D]
//	switchboard call    [--config F]... TOOL [JSON-ARGS] [--timeout D]
//	switchboard status  [--config F]... [--json] [--timeout D]
//	switchboard status  --gateway URL [--auth-token-env NAME] [--json]
//	switchboard check   [--config F]... [--timeout D]
//	switchboard pins    [--config F]... [--json] [--timeout D]
//	switchboard pins diff [SERVER[/TOOL]]... [--config F]... [--json]
//	switchboard pins approve SERVER[/TOOL]... | --all [--config F]...
//	switchboard reconnect NAME [--gateway URL] [--auth-token-env NAME]
//	switchboard login   NAME [--config F]... [--scopes S,...] [--no-browser] [--wait D]
//	switchboard logout  NAME
//	switchboard trust   [FILE]
//	switchboard audit verify [--anchor SEQ:HASH] FILE...
//	switchboard demo-server [--name NAME] [--listen HOST:PORT]
//	switchboard version
//
// Without --config, the files are ./.mcp.json and
// $XDG_CONFIG_HOME/switchboard/mcp.json; with neither, an embedded default
// starts two built-in demo servers. A ./.mcp.json is used only once trusted
// as it is now, with switchboard trust.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-mcp/switchboard/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stopSignals: stop}
	err := e.run(ctx, os.Args[1:])
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// env is what a verb runs with: its streams and the process's signal
// handling.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stopSignals restores the default signal handling, so that a second
	// interrupt during a graceful shutdown ends the process at once.
	stopSignals func()
	// executable is the switchboard binary that the embedded default config
	// runs as its demo servers; "" means this process's own.
	executable string
	// pinsVerb marks a pins verb, which prints the changes of tool pinning
	// itself: the manager's warnings of them would say it twice.
	pinsVerb bool
}

// run runs the verb of args. It is main without the exit, for tests.
func (e *env) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return errUsage
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "serve":
		return e.serve(ctx, rest)
	case "tools":
		return e.tools(ctx, rest)
	case "call":
		return e.call(ctx, rest)
	case "status":
		return e.status(ctx, rest)
	case "check":
		return e.check(ctx, rest)
	case "pins":
		return e.pins(ctx, rest)
	case "reconnect":
		return e.reconnect(ctx, rest)
	case "login":
		return e.login(ctx, rest)
	case "logout":
		return e.logout(ctx, rest)
	case "trust":
		return e.trust(rest)
	case "audit":
		return e.audit(rest)
	case "demo-server":
		return e.demoServer(ctx, rest)
	case "version":
		return e.version(rest)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] == "pins" {
			fmt.Fprint(e.stdout, pinsHelp)
			return nil
		}
		fmt.Fprint(e.stdout, usage)
		return nil
	default:
		return usageErrorf("unknown command %q", verb)
	}
}

const usage = `switchboard puts every configured MCP server behind one MCP endpoint.

Usage:
  switchboard serve   [--config F]... [--listen HOST:PORT | --stdio] [--stateless] [--allow-origin ORIGIN]...
                      [--auth-token-env NAME] [--insecure] [--startup-gate D] [--shutdown-timeout D]
                      [--tool-search off|on|auto[:N]] [--max-conns N]
  switchboard tools   [--config F]... [--json] [--search QUERY [--limit N]] [--timeout D]
  switchboard call    [--config F]... TOOL [JSON-ARGS] [--timeout D]
  switchboard status  [--config F]... [--json] [--timeout D]
  switchboard status  --gateway URL [--auth-token-env NAME] [--json]
  switchboard check   [--config F]... [--timeout D]
  switchboard pins    [--config F]... [--json] [--timeout D]
  switchboard pins diff [SERVER[/TOOL]]... [--config F]... [--json]
  switchboard pins approve SERVER[/TOOL]... | --all [--config F]...
  switchboard reconnect NAME [--gateway URL] [--auth-token-env NAME]
  switchboard login   NAME [--config F]... [--scopes S,...] [--no-browser] [--wait D]
  switchboard logout  NAME
  switchboard trust   [FILE]
  switchboard audit verify [--anchor SEQ:HASH] FILE...
  switchboard demo-server [--name NAME] [--listen HOST:PORT]
  switchboard version

Flags may come before or after a verb's arguments; -- ends them. Without
--config, the files are ./.mcp.json and
$XDG_CONFIG_HOME/switchboard/mcp.json; with neither, an embedded default
starts two built-in demo servers. A ./.mcp.json comes with a repository:
its servers run commands, so every verb ignores it, with a warning, until
'switchboard trust' records it as trusted as it is now (by path and
SHA-256, under $XDG_STATE_HOME/switchboard); a change needs trusting
again. Files named with --config need no trust. tools, call and check
wait for servers at most --timeout (10s; status: 1s); a server with tools
in the cache shows them meanwhile. SWITCHBOARD_TIMEOUT_MS overrides every server's timeout.
Each stdio server gets SWITCHBOARD_CHAIN, which names the config entries
that started the Switchboards above it: a Switchboard started by an entry
of its own config, or with 4 Switchboards above it, refuses to run (exit
status 3), and the one above holds that server as failed until its config
changes. login stores a server's OAuth tokens under
$XDG_STATE_HOME/switchboard/oauth (else ~/.local/state/...), where serve
and the other verbs find them; logout forgets them. audit verify checks
the hash chain of an audit log, its rotated files oldest first (exit
status 0 when intact, 1 naming the first line that breaks it, 2 when a
file cannot be read). pins lists each tool against the definition first
trusted (kept in the pins file, under $XDG_STATE_HOME/switchboard/pins by
default); 'switchboard help pins' tells more.
`

// errUsage reports a usage error whose message was already printed.
var errUsage = errors.New("usage")

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError ends the process with a status and no further message: the verb
// has said what there was to say.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitCode prints err, if it says anything, and returns the process's exit
// status: 0 for success, 2 for usage errors, config.ChainExitCode (3) for a
// refusal to run inside another Switchboard, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	var ee *exitError
	var ue *usageError
	var ce *config.ChainError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ce):
		// The status and the line tell the Switchboard above why.
		fmt.Fprintf(stderr, "switchboard: %s\n", printable(err.Error()))
		return config.ChainExitCode
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "switchboard: %s\nRun 'switchboard help' for usage.\n", printable(ue.Error()))
		return 2
	default:
		fmt.Fprintf(stderr, "switchboard: %s\n", printable(err.Error()))
		return 1
	}
}
