package toolvec

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/switchboard-mcp/switchboard/internal/userfile"
)

// MaxStoredVectors is the most vectors a file of Options.Dir keeps, the
// most recently used first: the 5,000 tools an index is sized for and as
// many spares (DefaultMaxSpareVectors). A file that claims more is
// ignored.
const MaxStoredVectors = 10_000

// MaxFileBytes is the largest file of Options.Dir that is read; a larger
// one is ignored (and logged) and replaced by the next write, which keeps
// within it by dropping the least recently used vectors: 10,000 vectors of
// 1,536 dimensions fit.
const MaxFileBytes = 64 << 20

// maxDims bounds the dimensions a file may claim.
const maxDims = 1 << 14

// fileMagic starts a vector file; its last byte is the format's version.
var fileMagic = [8]byte{'S', 'B', 'V', 'E', 'C', 'S', 0, 1}

// headerBytes is the size of a file's header: fileMagic, the identity
// (the SHA-256 of the endpoint and model), the dimensions and the count.
const headerBytes = 8 + 32 + 4 + 4

// A vector file is, little-endian:
//
//	magic [8]byte | identity [32]byte | dims uint32 | count uint32
//	count × (key [32]byte | dims × float32)   most recently used first
//	crc32 (IEEE) of all of the above, uint32
//
// The identity and the file's name are hashes of the endpoint's URL
// (without credentials or query) and the model: the file holds no URL and
// no key, only vectors of tools' texts, keyed by hashes of them.

// identity returns the hash that names the file of endpoint and model.
func identity(endpoint, model string) [32]byte {
	return sha256.Sum256([]byte("switchboard tool vectors\x00" + endpoint + "\x00" + model))
}

// FileName returns the name of the file, in Options.Dir, that keeps the
// vectors of model from endpoint: a hash of both, plus ".vec".
func FileName(endpoint, model string) string {
	id := identity(endpoint, model)
	return hex.EncodeToString(id[:16]) + ".vec"
}

// stored is a vector read from or written to a file.
type stored struct {
	key  [32]byte
	vec  []float32
	used uint64
}

// errFile is what is wrong with a file's content.
var errFile = errors.New("not a vector file of this endpoint and model")

// readVectors reads the file at path, kept for id: nil and no error if
// there is none. A file over MaxFileBytes, or whose content is not as
// encodeVectors writes it, is an error that says which.
func readVectors(path string, id [32]byte) ([]stored, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than MaxFileBytes (%d bytes)", MaxFileBytes)
	}
	return decodeVectors(data, id)
}

func decodeVectors(data []byte, id [32]byte) ([]stored, error) {
	if len(data) < headerBytes+4 || !bytes.Equal(data[:8], fileMagic[:]) || !bytes.Equal(data[8:40], id[:]) {
		return nil, errFile
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: its checksum does not match", errFile)
	}
	dims, count := int(binary.LittleEndian.Uint32(data[40:])), int(binary.LittleEndian.Uint32(data[44:]))
	switch {
	case dims < 1 || dims > maxDims:
		return nil, fmt.Errorf("%w: %d dimensions", errFile, dims)
	case count > MaxStoredVectors:
		return nil, fmt.Errorf("%w: %d vectors, over MaxStoredVectors (%d)", errFile, count, MaxStoredVectors)
	case len(body) != headerBytes+count*(32+4*dims):
		return nil, fmt.Errorf("%w: %d bytes of vectors for %d of %d dimensions", errFile, len(body)-headerBytes, count, dims)
	}
	out := make([]stored, count)
	p := body[headerBytes:]
	for i := range out {
		copy(out[i].key[:], p)
		p = p[32:]
		v := make([]float32, dims)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(p))
			if math.IsNaN(float64(v[j])) || math.IsInf(float64(v[j]), 0) {
				return nil, fmt.Errorf("%w: vector %d is not finite", errFile, i)
			}
			p = p[4:]
		}
		out[i].vec = v
	}
	return out, nil
}

// encodeVectors encodes the vectors of dims dimensions in list, the most
// recently used first, at most MaxStoredVectors and within MaxFileBytes.
func encodeVectors(list []stored, id [32]byte, dims int) []byte {
	list = slices.DeleteFunc(list, func(s stored) bool { return len(s.vec) != dims })
	slices.SortFunc(list, func(a, b stored) int {
		if c := cmp.Compare(b.used, a.used); c != 0 {
			return c
		}
		return bytes.Compare(a.key[:], b.key[:])
	})
	rec := 32 + 4*dims
	list = list[:min(len(list), MaxStoredVectors, (MaxFileBytes-headerBytes-4)/rec)]
	data := make([]byte, 0, headerBytes+len(list)*rec+4)
	data = append(data, fileMagic[:]...)
	data = append(data, id[:]...)
	data = binary.LittleEndian.AppendUint32(data, uint32(dims))
	data = binary.LittleEndian.AppendUint32(data, uint32(len(list)))
	for _, s := range list {
		data = append(data, s.key[:]...)
		for _, x := range s.vec {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	return binary.LittleEndian.AppendUint32(data, crc32.ChecksumIEEE(data))
}

// path returns the ranker's file, or "" if it keeps none.
func (r *Ranker) path() string {
	if r.o.Dir == "" {
		return ""
	}
	return filepath.Join(r.o.Dir, FileName(r.o.Endpoint, r.model))
}

// load reads the ranker's file into its cache, older than anything
// there, and publishes. A file it cannot use is logged, once, and marked
// to be replaced by the next save.
func (r *Ranker) load() {
	path := r.path()
	if path == "" {
		return
	}
	list, err := readVectors(path, identity(r.o.Endpoint, r.model))
	if err != nil {
		r.o.Logger.Warn("tool search: ignoring the file of kept vectors; the tools are embedded again and it is replaced",
			"file", path, "endpoint", r.o.Endpoint, "model", r.model, "error", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.dirty = true
		return
	}
	if len(list) == 0 {
		return
	}
	if r.dims != 0 && r.dims != len(list[0].vec) {
		r.dirty = true
		return // the endpoint answered first, in other dimensions
	}
	r.dims = len(list[0].vec)
	// The first is the most recently used: stamps below the clock's next,
	// in the file's order, so that pruning drops the oldest spares.
	base := r.clock
	r.clock += uint64(len(list))
	for i, s := range list {
		if r.cache[s.key] == nil {
			r.cache[s.key] = &cached{vec: s.vec, used: base + uint64(len(list)-i)}
		}
	}
	r.publishLocked()
	r.signalLocked()
}

// save writes the cache to the ranker's file if it changed since it was
// read or written. It holds the lock only to copy the cache.
func (r *Ranker) save() {
	path := r.path()
	r.mu.Lock()
	if path == "" || !r.dirty || r.dims == 0 {
		r.mu.Unlock()
		return
	}
	list := make([]stored, 0, len(r.cache))
	for k, c := range r.cache {
		list = append(list, stored{key: k, vec: c.vec, used: c.used})
	}
	dims := r.dims
	r.dirty = false
	r.mu.Unlock()
	if err := userfile.Replace(path, encodeVectors(list, identity(r.o.Endpoint, r.model), dims), nil); err != nil {
		r.mu.Lock()
		r.dirty = true
		r.mu.Unlock()
		r.logOnce("tool search could not keep the tools' vectors on disk; they are embedded again at the next start", err)
	}
}
