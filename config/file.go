package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxFileSize is the largest config file [Load] reads, far above any real
// config: a larger file is refused rather than read into memory.
const MaxFileSize = 4 << 20

// errNotRegular is why a config path that is a device, a FIFO or a
// directory is refused: reading one may never end (/dev/zero) or block
// (a FIFO nobody writes).
var errNotRegular = errors.New("not a regular file")

// readFile reads the config file at path, following symbolic links, if it
// is a regular file of at most MaxFileSize bytes. A missing file gives an
// error that is fs.ErrNotExist; any other problem an *Error naming path.
func readFile(path string) ([]byte, error) {
	// Stat before opening: opening a FIFO blocks until it has a writer.
	info, err := os.Stat(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	if err := regular(path, info); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	// What was opened may not be what was stat'ed, if the path changed
	// in between.
	if info, err = f.Stat(); err != nil {
		return nil, fileError(path, err)
	}
	if err := regular(path, info); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fileError(path, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Problem: fmt.Sprintf("read: larger than %d MiB; a config file is far smaller", MaxFileSize>>20)}
	}
	return data, nil
}

// regular returns an *Error unless info is that of a regular file.
func regular(path string, info fs.FileInfo) error {
	if info.Mode().IsRegular() {
		return nil
	}
	what := "a directory"
	switch m := info.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		what = "a device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case !m.IsDir():
		what = "a special file"
	}
	return &Error{File: path, Problem: fmt.Sprintf("read: %s (%s); want a regular file", errNotRegular, what), err: errNotRegular}
}

// fileError is err, from reading the file at path, as an *Error that
// still matches fs.ErrNotExist and the like.
func fileError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in the message
	}
	return &Error{File: path, Problem: "read: " + err.Error(), err: err}
}
