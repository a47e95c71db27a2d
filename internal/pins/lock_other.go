//go:build !unix

package pins

import "os"

// lock takes no lock where flock is not: sharing a pins file between
// processes is up to the operator there.
func lock(string) (*os.File, error) { return nil, nil }

func unlock(*os.File) {}
