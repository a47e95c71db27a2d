package oauth

import (
	"slices"
	"testing"
)

// TestReaders runs the Windows token file check's rules: who, besides the
// owner, may read a file with these access list entries.
func TestReaders(t *testing.T) {
	const (
		owner       = "S-1-5-21-1-2-3-1001"
		users       = "S-1-5-32-545" // BUILTIN\Users
		other       = "S-1-5-21-1-2-3-1002"
		user        = "S-1-5-21-1-2-3-1003" // who runs Switchboard, not the owner
		fullControl = 0x001f01ff
		writeOnly   = 0x00000002 | 0x00000004 // FILE_WRITE_DATA | FILE_APPEND_DATA
	)
	for _, tt := range []struct {
		name string
		aces []ace
		want []string
	}{
		{"what the store writes", []ace{{allow: true, mask: fullControl, sid: owner}, {allow: true, mask: fullControl, sid: sidSystem}}, nil},
		{"administrators may read anything anyway", []ace{{allow: true, mask: fullControl, sid: owner}, {allow: true, mask: genericAll, sid: sidAdministrators}}, nil},
		{"inherited from a shared folder", []ace{{allow: true, mask: fullControl, sid: owner}, {allow: true, mask: genericRead, sid: users}}, []string{users}},
		{"read data alone is enough", []ace{{allow: true, mask: fileReadData, sid: other}}, []string{other}},
		{"maximum allowed includes read", []ace{{allow: true, mask: maximumAllowed, sid: other}}, []string{other}},
		{"write without read", []ace{{allow: true, mask: writeOnly, sid: other}}, nil},
		{"for the folder's children only", []ace{{allow: true, inheritOnly: true, mask: fullControl, sid: users}}, nil},
		{"a deny entry grants nothing", []ace{{allow: false, mask: fullControl, sid: users}}, nil},
		{"the user, where the Administrators group owns the file (elevated)", []ace{{allow: true, mask: fullControl, sid: user}, {allow: true, mask: fullControl, sid: sidSystem}}, nil},
		{"each reader once, in order", []ace{{allow: true, mask: genericRead, sid: users}, {allow: true, mask: fileReadData, sid: other}, {allow: true, mask: fullControl, sid: users}}, []string{users, other}},
	} {
		if got := readers(tt.aces, owner, user); !slices.Equal(got, tt.want) {
			t.Errorf("%s: readers = %v, want %v", tt.name, got, tt.want)
		}
	}
}
