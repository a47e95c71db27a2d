// Package interop holds the tests that run Switchboard against MCP software
// that no one here wrote: the official conformance suite, the MCP
// Inspector, and the reference servers, pinned in package.json and
// installed by .ci/run (npm ci here, go install for go-sdk's
// everything-server). Outside CI, the tests skip, saying what is missing;
// with SWITCHBOARD_INTEROP=require (as in CI) a missing peer fails them.
//
// A plain `go test ./...` shows nothing of a package that passes, skips
// included, so once its tests have run, TestMain writes how many skipped,
// what is missing and the commands that install it to the go command's own
// stderr (on Linux) or else to the terminal.
package interop
