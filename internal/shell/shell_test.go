package shell

import (
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
	for _, tc := range []struct {
		verb, config string
		args         []string
		want         string
	}{
		{"login", "", []string{"web"}, "switchboard login web"},
		{"pins approve", "/a b/mcp.json", []string{"srv/add"}, "switchboard pins approve srv/add --config '/a b/mcp.json'"},
		{"pins approve", "<embedded>", []string{"x;y"}, "switchboard pins approve 'x;y'"},
	} {
		if got := Command(tc.verb, tc.config, tc.args...); got != tc.want {
			t.Errorf("Command(%q, %q, %q) = %s, want %s", tc.verb, tc.config, tc.args, got, tc.want)
		}
	}
}
