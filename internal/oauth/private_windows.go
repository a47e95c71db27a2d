package oauth

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// private returns a *FileError unless f, a token file, is readable by its
// owner alone: its ACL lets no other account read it, but for SYSTEM and
// the Administrators group, which can read any file. A file without an ACL
// is readable by everyone.
func private(f *os.File) error {
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("oauth: read the access list of %s: %w", f.Name(), err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("oauth: read the owner of %s: %w", f.Name(), err)
	}
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return fmt.Errorf("oauth: who am I: %w", err)
	}
	me := user.User.Sid.String()
	// A descriptor without an access list (the error) or with a NULL one
	// lets everyone in.
	var others []string
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) || err == nil && dacl == nil:
		others = []string{"Everyone"}
	case err != nil:
		return fmt.Errorf("oauth: read the access list of %s: %w", f.Name(), err)
	default:
		aces, err := entries(dacl)
		if err != nil {
			return fmt.Errorf("oauth: read the access list of %s: %w", f.Name(), err)
		}
		for _, sid := range readers(aces, owner.String(), me) {
			others = append(others, accountName(sid))
		}
	}
	if len(others) == 0 {
		return nil
	}
	return &FileError{Path: f.Name(), Problem: "readable by others (" + strings.Join(others, ", ") + ")",
		Fix: fmt.Sprintf(`run: icacls "%s" /inheritance:r /grant:r "%s:F"`, f.Name(), accountName(me))}
}

// entries reads the entries of dacl.
func entries(dacl *windows.ACL) ([]ace, error) {
	aces := make([]ace, 0, dacl.AceCount)
	for i := range uint32(dacl.AceCount) {
		var e *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &e); err != nil {
			return nil, err
		}
		sid := (*windows.SID)(unsafe.Pointer(&e.SidStart))
		aces = append(aces, ace{
			allow:       e.Header.AceType == windows.ACCESS_ALLOWED_ACE_TYPE,
			inheritOnly: e.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0,
			mask:        uint32(e.Mask),
			sid:         sid.String(),
		})
	}
	return aces, nil
}

// accountName is DOMAIN\name of the account sid, or sid if it has none.
func accountName(sid string) string {
	s, err := windows.StringToSid(sid)
	if err != nil {
		return sid
	}
	account, domain, _, err := s.LookupAccount("")
	if err != nil {
		return sid
	}
	if domain == "" {
		return account
	}
	return domain + `\` + account
}

// makePrivate gives path an ACL of its own, inheriting nothing, that lets
// only the current user and SYSTEM in.
func makePrivate(path string) error {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return fmt.Errorf("who am I: %w", err)
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;OICI;FA;;;" + user.User.Sid.String() + ")(A;OICI;FA;;;SY)")
	if err != nil {
		return fmt.Errorf("access list for %s: %w", path, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("access list for %s: %w", path, err)
	}
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	return nil
}

// fileID is "" on Windows: Stamp is read on every request, and what
// identifies a file there takes opening it. The modification time tells
// two saves apart without it: NTFS keeps it to 100 ns.
func fileID(os.FileInfo) string { return "" }
