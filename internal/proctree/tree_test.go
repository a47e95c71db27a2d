//go:build linux || windows

package proctree

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// startParent starts the test binary as a tree's root that starts a sleeper
// of its own, whose pid it prints: see startTree.
func startParent(t *testing.T) (*Tree, *exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), parentEnv+"=1")
	return startTree(t, cmd)
}

// TestEndingTheTree: what ends a tree ends the root's descendants too.
// On Windows, releasing the tree closes its job, which ends it.
func TestEndingTheTree(t *testing.T) {
	ends := map[string]func(*Tree){"Kill": (*Tree).Kill}
	if runtime.GOOS == "windows" {
		ends["Release"] = (*Tree).Release
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			tree, cmd, grandchild := startParent(t)
			exited := mcptest.WatchExit(t, grandchild)
			end(tree)
			if !exited(time.Minute) {
				t.Fatalf("grandchild %d survived %s", grandchild, name)
			}
			// A job closed with its processes in it ends them with status 0
			// (under Wine at least): only Kill's status says it.
			if err := cmd.Wait(); err == nil && name == "Kill" {
				t.Errorf("the root exited cleanly after Kill; want it killed")
			}
		})
	}
}

func TestTreeDiesWithItsParent(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), orphanerEnv+"="+os.Args[0])
	out, err := parent.Output()
	if err != nil {
		t.Fatalf("parent: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("parent printed %q: %v", out, err)
	}
	if !mcptest.WatchExit(t, pid)(time.Minute) {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
		t.Fatalf("tree root %d outlived its parent", pid)
	}
}
