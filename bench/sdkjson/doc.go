// Package sdkjson holds the reproduction of a cost in go-sdk v1.8.0, for a
// report upstream (docs/performance.md): its internal json.Unmarshal decodes
// bytes already in memory through a streaming Decoder, which allocates a
// read buffer of at least 32 KiB for every message. The package has no
// code of its own; its benchmarks are the reproduction.
package sdkjson
