package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/switchboard-mcp/switchboard/gateway"
)

// audit runs the audit subcommands: verify FILE...
func (e *env) audit(args []string) error {
	if len(args) == 0 {
		return usageErrorf("audit: want a subcommand: verify FILE...")
	}
	switch args[0] {
	case "verify":
		return e.auditVerify(args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(e.stdout, "Usage: switchboard audit verify [--anchor SEQ:HASH] FILE...")
		return nil
	default:
		return usageErrorf("audit: unknown subcommand %q (want verify)", args[0])
	}
}

// auditVerify checks the hash chain of the audit log in FILE...: exit 0
// when intact, 1 naming the first file and line that breaks it, 2 when a
// file cannot be read.
func (e *env) auditVerify(args []string) error {
	fs := e.flags("audit verify", `[--anchor SEQ:HASH] FILE...

Check the hash chain of an audit log ("-" for standard input), as serve
writes it with gateway.audit: exit status 0 when it is intact, 1 naming
the first file and line (1-based) that is edited, inserted, after a
deletion, truncated or not JSON, 2 when a file cannot be read. Give the
rotated files oldest first (audit.jsonl.2 audit.jsonl.1 audit.jsonl):
each file's first line must continue the last line of the file before it.
A rotated file alone verifies too, and its start is printed.

When intact, the last line's seq and hash are printed as an anchor: keep
it elsewhere, and a later verify with --anchor finds the lines up to it
deleted or edited, which the chain alone cannot show for the last lines.`)
	anchorFlag := fs.String("anchor", "", "`SEQ:HASH` (or HASH) of a line that an earlier verify printed: the log must still hold it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("audit verify: want a FILE, or the rotated files oldest first and the current one last")
	}
	var anchor *gateway.AuditAnchor
	if *anchorFlag != "" {
		a, err := gateway.ParseAuditAnchor(*anchorFlag)
		if err != nil {
			return usageErrorf("audit verify: --anchor: %v", err)
		}
		anchor = &a
	}
	var files []gateway.AuditFile
	stdin := false
	for _, path := range fs.Args() {
		if path == "-" {
			if stdin {
				return usageErrorf(`audit verify: "-" (standard input) is given twice`)
			}
			stdin = true
			files = append(files, gateway.AuditFile{Name: "-", R: e.stdin})
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			return e.auditReadError(err)
		}
		defer f.Close()
		files = append(files, gateway.AuditFile{Name: path, R: f})
	}
	sum, err := gateway.VerifyAuditFiles(files, anchor)
	var br *gateway.AuditBreak
	switch {
	case errors.As(err, &br):
		return fmt.Errorf("audit verify: the chain breaks at %w", err)
	case err != nil:
		return e.auditReadError(err)
	}
	names := printableLine(strings.Join(fs.Args(), ", "))
	if sum.Lines == 0 {
		fmt.Fprintf(e.stdout, "%s: intact, 0 lines\n", names)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: intact, %d lines, seq %d to %d\n", names, sum.Lines, sum.FirstSeq, sum.Last.Seq)
	if sum.Start != gateway.AuditGenesis {
		fmt.Fprintf(e.stdout, "starts after seq %d, in a file not given (rotated): prev %s\n", sum.FirstSeq-1, sum.Start)
	}
	if anchor != nil {
		fmt.Fprintf(e.stdout, "anchor %s: held\n", anchor)
	}
	fmt.Fprintf(e.stdout, "last line: seq %d, hash %s\nkeep it elsewhere, and check later with: switchboard audit verify --anchor %s FILE...\n", sum.Last.Seq, sum.Last.Hash, sum.Last)
	return nil
}

// auditReadError is a file that audit verify cannot read: exit status 2,
// for the chain is neither intact nor found broken.
func (e *env) auditReadError(err error) error {
	fmt.Fprintf(e.stderr, "switchboard: audit verify: %s\n", printable(strings.TrimPrefix(err.Error(), "audit verify: ")))
	return &exitError{code: 2}
}
