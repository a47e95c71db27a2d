package pins

import "testing"

func TestSplitTarget(t *testing.T) {
	servers := []string{"srv", "team", "team/gh", "me@corp"}
	for _, tc := range []struct {
		in, server, tool, pin string
		one                   bool
	}{
		{"srv", "srv", "", "", false},
		{"srv/add", "srv", "add", "", true},
		{"srv/add@0123456789abcdef", "srv", "add", "0123456789abcdef", true},
		{"srv/mail@send", "srv", "mail@send", "", true},
		{"srv/mail@send@01234567", "srv", "mail@send", "01234567", true},
		{"team/gh", "team/gh", "", "", false},
		{"team/gh/create_issue@deadbeef", "team/gh", "create_issue", "deadbeef", true},
		{"team/other", "team", "other", "", true},
		{"me@corp/x", "me@corp", "x", "", true},
		{"srv__add", "srv__add", "", "", false},
		{"nosuch/x", "nosuch", "x", "", true},
	} {
		server, tool, pin, one := SplitTarget(tc.in, servers)
		if server != tc.server || tool != tc.tool || pin != tc.pin || one != tc.one {
			t.Errorf("SplitTarget(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tc.in, server, tool, pin, one, tc.server, tc.tool, tc.pin, tc.one)
		}
	}
}
