package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/switchboard-mcp/switchboard/gateway"
)

// audit runs the audit subcommands: verify FILE.
func (e *env) audit(args []string) error {
	if len(args) == 0 {
		return usageErrorf("audit: want a subcommand: verify FILE")
	}
	switch args[0] {
	case "verify":
		return e.auditVerify(args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(e.stdout, "Usage: switchboard audit verify FILE")
		return nil
	default:
		return usageErrorf("audit: unknown subcommand %q (want verify)", args[0])
	}
}

// auditVerify checks the hash chain of the audit log FILE: exit 0 when
// intact, 1 naming the first line that breaks it.
func (e *env) auditVerify(args []string) error {
	fs := e.flags("audit verify", `FILE

Check the hash chain of the audit log FILE ("-" for standard input), as
serve writes it with gateway.audit: exit status 0 when it is intact, 1
naming the first line (1-based) that is edited, inserted, after a deletion,
truncated or not JSON. An edit or deletion of the last lines alone leaves
no trace.`)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("audit verify: want one FILE, got %d arguments", fs.NArg())
	}
	path := fs.Arg(0)
	r := e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("audit verify: %w", err)
		}
		defer f.Close()
		r = f
	}
	n, err := gateway.VerifyAuditLog(r)
	var br *gateway.AuditBreak
	switch {
	case errors.As(err, &br):
		return fmt.Errorf("audit verify: %s: the chain breaks at %w", path, err)
	case err != nil:
		return fmt.Errorf("audit verify: %s: %w", path, err)
	}
	fmt.Fprintf(e.stdout, "%s: intact, %d lines\n", printableLine(path), n)
	return nil
}
