package oauth

// An ace is what the token store needs to know of an entry of a Windows
// access control list; its rules live here, apart from the Windows calls,
// so that they are tested on every platform.
type ace struct {
	allow       bool   // an access-allowed entry; the others grant nothing
	inheritOnly bool   // applies to the directory's children, not to it
	mask        uint32 // the rights it grants
	sid         string // whom, as an SID string such as "S-1-5-18"
}

// Rights in an access mask that let a holder read a file's contents
// (winnt.h).
const (
	fileReadData   = 0x00000001
	maximumAllowed = 0x02000000
	genericAll     = 0x10000000
	genericRead    = 0x80000000
	readRights     = fileReadData | maximumAllowed | genericAll | genericRead
)

// Accounts that may read any file anyway.
const (
	sidSystem         = "S-1-5-18"
	sidAdministrators = "S-1-5-32-544"
)

// readers returns the SIDs that aces let read a file, beyond those of us
// (the file's owner, and the user Switchboard runs as, who differ where an
// administrator runs it elevated: the Administrators group then owns what
// it creates), SYSTEM and the Administrators group, each once, in order.
// Deny entries are not weighed: a file that another account could read but
// for a deny entry is not what the store writes, and refusing it is the
// safe side.
func readers(aces []ace, us ...string) []string {
	var others []string
	seen := map[string]bool{sidSystem: true, sidAdministrators: true}
	for _, sid := range us {
		seen[sid] = true
	}
	for _, a := range aces {
		if !a.allow || a.inheritOnly || a.mask&readRights == 0 || seen[a.sid] {
			continue
		}
		seen[a.sid] = true
		others = append(others, a.sid)
	}
	return others
}
