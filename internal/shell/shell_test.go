package shell

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/home/a/mcp.json": "/home/a/mcp.json",
		"my file.json":     "'my file.json'",
		"it's":             `'it'\''s'`,
		"":                 "''",
		"$(rm -rf ~)":      "'$(rm -rf ~)'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCommand(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		verb   string
		config []string
		args   []string
		want   string
	}{
		{"login", []string{""}, []string{"web"}, "switchboard login web"},
		{"pins approve", []string{"/a b/mcp.json", "/c/.mcp.json"}, []string{"srv/add@0123"}, "switchboard pins approve srv/add@0123 --config '/a b/mcp.json' --config /c/.mcp.json"},
		{"pins approve", []string{"<embedded>"}, []string{"x;y"}, "switchboard pins approve 'x;y'"},
		{"login", []string{"t1/fs.json"}, []string{"fs"}, "switchboard login fs --config " + Quote(filepath.Join(wd, "t1/fs.json"))},
	} {
		if got := Command(tc.verb, tc.config, tc.args...); got != tc.want {
			t.Errorf("Command(%q, %q, %q) = %s, want %s", tc.verb, tc.config, tc.args, got, tc.want)
		}
	}
}
