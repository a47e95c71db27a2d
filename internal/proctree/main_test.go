package proctree

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary plays the processes of a tree when one of these is set.
const (
	// orphanerEnv: a parent that starts the command it names in a tree,
	// prints the root's pid and exits without ending it (see
	// TestTreeDiesWithItsParent).
	orphanerEnv = "PROCTREE_TEST_ORPHANER"
	// parentEnv: a root that starts a sleeper of its own, prints its pid,
	// then sleeps too.
	parentEnv = "PROCTREE_TEST_PARENT"
	// sleeperEnv: a process that sleeps until it is killed.
	sleeperEnv = "PROCTREE_TEST_SLEEPER"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(sleeperEnv) != "":
		time.Sleep(time.Hour) // a process that does nothing until it is ended
		os.Exit(0)
	case os.Getenv(parentEnv) != "":
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), sleeperEnv+"=1")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(time.Hour) // it ends only when it is ended, whatever its child does
		os.Exit(0)
	case os.Getenv(orphanerEnv) != "":
		cmd := exec.Command(os.Getenv(orphanerEnv), "300")
		if cmd.Path == os.Args[0] {
			cmd.Env = append(os.Environ(), sleeperEnv+"=1")
		}
		t, err := Start(cmd)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(t.Pid())
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
