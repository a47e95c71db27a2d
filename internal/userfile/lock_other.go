//go:build !unix

package userfile

import "os"

// Lock takes no lock where flock is not: one writer per file is up to the
// operator there.
func Lock(string, bool) (*os.File, error) { return nil, nil }
