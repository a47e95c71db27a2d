package proctree

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// startParent starts the test binary as a tree's root that starts a sleeper
// of its own, and returns the tree and the sleeper's pid.
func startParent(t *testing.T) (*Tree, *exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), parentEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tree.Kill()
		cmd.Wait()
		tree.Release()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the grandchild's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line, err)
	}
	return tree, cmd, pid
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

func TestReleaseEndsTheTree(t *testing.T) {
	tree, _, grandchild := startParent(t)
	exited := mcptest.WatchExit(t, grandchild)
	tree.Release()
	if !exited(time.Minute) {
		t.Fatalf("grandchild %d survived the release of its job", grandchild)
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
