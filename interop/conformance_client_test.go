package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ansiRE matches the suite's colour codes.
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// scenarioRE matches a line of the client suite's summary.
var scenarioRE = regexp.MustCompile(`(?m)^[✓✗] (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?$`)

// clientDone is the line internal/conformance/client prints to stdout
// when a scenario ran to its end, just before it exits 0.
const clientDone = "conformance client: done"

// pendingClientScenario reports whether a scenario of the core suite is
// one the conformance client does not run yet. The suite's core includes
// the authorization scenarios, which are the next issue: until then they
// fail, and only they may.
func pendingClientScenario(name string) bool { return strings.HasPrefix(name, "auth/") }

// TestConformanceClient: the official suite, in client mode, scores
// internal/conformance/client, which runs every scenario through our own
// internal/upstream package. Every scenario it runs passes, with no
// warning, and exits 0.
func TestConformanceClient(t *testing.T) {
	p := findPeers(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "conformance-client")
	if strings.ContainsAny(bin, " \t") {
		t.Skipf("the suite splits its --command on spaces, and the temporary directory has one: %q", bin)
	}
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/conformance/client").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	results := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	raw, err := p.command(t, ctx, p.conformance, "client", "--command", bin, "--suite", "core", "-o", results).CombinedOutput()
	out := ansiRE.ReplaceAllString(string(raw), "")
	m := totalRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the suite printed no total (%v):\n%s", err, out)
	}
	passed, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	total := strings.TrimSpace(out[strings.Index(out, m[0]):])
	t.Log(total)

	ran, pendingFailed := 0, 0
	for _, s := range scenarioRE.FindAllStringSubmatch(out, -1) {
		name := s[1]
		sPassed, _ := strconv.Atoi(s[2])
		sFailed, _ := strconv.Atoi(s[3])
		sWarned, _ := strconv.Atoi(s[4]) // "" when there were none
		if pendingClientScenario(name) {
			pendingFailed += sFailed
			continue
		}
		ran++
		if sFailed != 0 || sWarned != 0 || sPassed == 0 {
			t.Errorf("%s: %d passed, %d failed, %d warnings; want passes only", name, sPassed, sFailed, sWarned)
		}
		if stdout := resultOf(t, results, name, "stdout.txt"); !strings.Contains(stdout, clientDone) {
			t.Errorf("%s: the client did not run to its end; stderr:\n%s", name, resultOf(t, results, name, "stderr.txt"))
		}
	}
	switch {
	case ran == 0 || passed == 0:
		t.Errorf("the client ran no scenario to a pass (%d ran, %s):\n%s", ran, total, out)
	case failed != pendingFailed:
		t.Errorf("%d checks failed, %d of them in pending scenarios:\n%s", failed, pendingFailed, failuresOf(out))
	}
	for line := range strings.Lines(out) {
		if strings.Contains(line, "WARNING") {
			t.Errorf("the suite warned: %s", strings.TrimSpace(line))
		}
	}
}

// resultOf returns the file the suite saved for the one run of scenario
// under results.
func resultOf(t *testing.T, results, scenario, file string) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(results, scenario+"-*", file))
	if err != nil || len(paths) != 1 {
		t.Fatalf("the suite's %s for %s: found %q (%v)", file, scenario, paths, err)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
