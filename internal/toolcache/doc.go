// Package toolcache is the persistent tool-list cache. It remembers the tool
// list each MCP server had last time, so that a server still connecting when
// the startup gate closes can expose its tools at once ("deferred tools").
// The embedded default stores files under the user cache dir, in
// [DefaultDir].
//
// # Files
//
// A [Cache] is a directory with one file per server. The file name is the hex
// SHA-256 of the server name plus ".json", so any server name (any Unicode,
// slashes, dots, the empty string) maps to a safe name inside the directory.
// Directories are created with mode 0700 and files are written with 0600.
// A file holds one JSON object:
//
//	{
//	  "version": 1,
//	  "fingerprint": "9f86d081…",
//	  "server": "github",
//	  "savedAt": "2026-01-02T15:04:05.123456789Z",
//	  "tools": [ {"name": "search", "inputSchema": {…}, …}, … ],
//	  "serverInfo": {"name": "github-mcp", "title": "GitHub", "description": "…", "version": "1.2.0"},
//	  "instructions": "…"
//	}
//
// The fingerprint is a hex string computed by the caller from the server's
// unresolved config, so rotating a credential does not change it while any
// other config change does. savedAt is the RFC 3339 time at which the list was
// fetched from the server. Each element of tools is an mcp.Tool as JSON.
// serverInfo (without icons) and instructions are what the server said of
// itself when it connected ([About]), so that while it is shown from the
// cache it is described as when connected; each is absent if the server
// sent none, and in files written before they were kept, which are read as
// they were. Instructions are cut to [MaxInstructions], and each string of
// serverInfo to [MaxInfoField], between words.
//
// # Reading
//
// [Cache.Get] reads the file each time and returns fresh values, so callers
// may change what it returns. Every problem is a miss, never an error:
//
//   - there is no file;
//   - the file is corrupt: bad JSON, a version other than [Version], a missing
//     field, tools that are not an array, a tool that is not an object
//     with a name, or a serverInfo or instructions of the wrong type (these
//     are logged at warn level and otherwise ignored);
//   - the file belongs to another server, or to another fingerprint;
//   - the entry has expired: savedAt is [Options.TTL] (by default
//     [DefaultTTL], 30 days) or more in the past;
//   - the tools list is empty.
//
// # Writing
//
// [Cache.Put] writes atomically: it writes a temporary file in the same
// directory, syncs it and renames it over the target, so a reader in this or
// any other process sees either the old entry or the new one. Writing is
// best-effort: callers may ignore the error, which Put returns anyway.
//
// A stale write never replaces a newer one. Each Put carries the time its list
// was fetched. Puts for one server are serialized by a per-server lock, and a
// Put is skipped when the entry on disk, or an earlier Put or removal made
// through the same Cache, is newer. Across processes the on-disk comparison
// leaves a narrow window between the check and the rename; within one
// process, use one Cache per directory.
//
// Putting an empty list never creates an entry: it removes the server's
// existing one, so that a server that now has no tools is not served a stale
// list.
//
// Resolved secrets never reach the disk. Put takes a redact function that it
// applies to every string of the tools, object keys included, after decoding
// them as JSON: names, titles, descriptions, schema strings and meta values;
// [Cache.Store] applies it to each string of serverInfo and instructions too.
// The cache itself never sees config.
//
// A nil *Cache, and a Cache opened with no directory because there is no user
// cache dir, are valid and do nothing: Get misses, and Put and Remove return
// nil. Callers disable caching that way.
package toolcache
