package gateway

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// chromium returns the headless browser, or skips the test without one,
// unless SWITCHBOARD_INTEROP=require (CI), where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := "no headless Chromium (Debian: apt-get install chromium)"
	if os.Getenv("SWITCHBOARD_INTEROP") == "require" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browse runs headless Chromium on url with args, and returns its output.
func browse(t *testing.T, browser, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir()}, append(args, url)...)
	cmd := exec.CommandContext(ctx, browser, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
	return string(out)
}

// TestStatusPageInABrowser: headless Chromium loads /status, and its table
// shows every server in its state, the one in trouble marked so; a
// screenshot is kept, in $SWITCHBOARD_ARTIFACTS if set.
func TestStatusPageInABrowser(t *testing.T) {
	browser := chromium(t)
	down := config.Server{Name: "down", Type: config.HTTP, URL: "http://10.9.8.7:1/mcp"}
	_, g := setup(t, upstreams{"up": mcptest.NewServer(mcptest.Script{})}, []config.Server{entry("up", false), down}, nil)
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()

	dom := browse(t, browser, srv.URL+"/status", "--dump-dom")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<tr data-server="up" data-state="connected">`),
		regexp.MustCompile(`<tr data-server="down" data-state="failed">.*class="state bad">failed<`),
		regexp.MustCompile(`<title>switchboard: ready, some servers down</title>`),
	} {
		if !want.MatchString(dom) {
			t.Errorf("the page in Chromium lacks %s:\n%s", want, dom)
		}
	}
	if strings.Contains(dom, "10.9.8.7") {
		t.Error("the page shows the server's address")
	}

	dir := os.Getenv("SWITCHBOARD_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "status.png")
	browse(t, browser, srv.URL+"/status", "--screenshot="+shot, "--window-size=1280,480", "--hide-scrollbars")
	if info, err := os.Stat(shot); err != nil || info.Size() == 0 {
		t.Errorf("no screenshot: %v", err)
	} else {
		t.Logf("screenshot: %s", shot)
	}
}
