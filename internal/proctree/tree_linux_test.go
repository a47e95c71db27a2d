package proctree

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// startShell starts script in a tree and returns it with the first line
// the script prints, which the tests use for a grandchild's pid.
func startShell(t *testing.T, script string) (*Tree, *exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
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
	tree, cmd, grandchild := startShell(t, `sleep 300 & echo $!; wait`)
	exited := mcptest.WatchExit(t, grandchild)
	tree.Kill()
	if !exited(time.Minute) {
		t.Fatalf("grandchild %d survived Kill", grandchild)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the root exited cleanly; want it killed")
	}
}

func TestKillReachesOrphans(t *testing.T) {
	// The root exits at once, leaving its child behind, as npx can.
	tree, cmd, orphan := startShell(t, `sleep 300 & echo $!`)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("root: %v", err)
	}
	exited := mcptest.WatchExit(t, orphan)
	tree.Kill()
	if !exited(time.Minute) {
		t.Fatalf("orphan %d survived Kill after its parent had exited", orphan)
	}
}

func TestInterruptAsksTheWholeTree(t *testing.T) {
	// The grandchild says its pid itself, once it is a process of its own:
	// told by $!, the signal could reach it while it was still a copy of
	// its parent, running the parent's trap.
	tree, cmd, grandchild := startShell(t, `trap 'exit 7' TERM; sh -c 'echo $$; exec sleep 300' & wait`)
	exited := mcptest.WatchExit(t, grandchild)
	tree.Interrupt()
	if !exited(time.Minute) {
		t.Fatalf("grandchild %d ignored Interrupt", grandchild)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("root ended with %v, want its TERM trap's exit status 7", err)
	}
}

func TestTreeDiesWithItsParent(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), orphanerEnv+"="+sleep)
	out, err := parent.Output()
	if err != nil {
		t.Fatalf("parent: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("parent printed %q: %v", out, err)
	}
	if !mcptest.WatchExit(t, pid)(time.Minute) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("tree root %d outlived its parent", pid)
	}
}

func TestStartRefusesPresetAttributes(t *testing.T) {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = sysProcAttr()
	if _, err := Start(cmd); err == nil || !strings.Contains(err.Error(), "SysProcAttr") {
		t.Errorf("Start = %v, want it to refuse a preset SysProcAttr", err)
	}
}

func TestStartReportsAMissingCommand(t *testing.T) {
	_, err := Start(exec.Command("/nonexistent/switchboard-test"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start = %v, want ErrNotExist", err)
	}
}
