//go:build linux || windows

package proctree

import (
	"os"
	"os/exec"
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

func TestKillEndsTheRootsDescendants(t *testing.T) {
	tree, cmd, grandchild := startParent(t)
	exited := mcptest.WatchExit(t, grandchild)
	tree.Kill()
	if !exited(time.Minute) {
		t.Fatalf("grandchild %d survived Kill", grandchild)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the root exited cleanly; want it killed")
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
