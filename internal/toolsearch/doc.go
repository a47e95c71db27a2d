// Package toolsearch is an in-memory index of tool definitions that ranks
// them by how well they match a request written in words, with BM25F: no
// network, no model, no files.
//
// # Documents and fields
//
// Each exposed tool is one [Doc], indexed under its server. Its text goes
// into six fields, each with its own weight and length normalisation
// ([Options], [DefaultOptions]):
//
//	Name               the public name split into words, and whole
//	Title              the title
//	Description        the description
//	ParamNames         the input schema's property names, nested ones too
//	ParamDescriptions  the schema's descriptions, titles and string enum values
//	Context            what is known of its server ([ServerContext]): config key
//	                   and description, package, serverInfo
//
// # Analysis
//
// Documents and queries are analysed alike. Text splits into chunks of
// letters, digits and the joiners _ - . (any Unicode letter or digit); a
// chunk splits into words at joiners, at case changes (camelCase,
// HTTPServer) and between letters and digits. Words are lowercased, English
// stop words are dropped, and words of ASCII letters are stemmed with the
// Snowball English (Porter2) stemmer of github.com/kljensen/snowball, whose
// stop list is used too. The words of a chunk of several words, joined, are
// one more term (list_files, list-files, listFiles and listfiles all give
// "listfil"), and so are the words of the <tool> part of a name of the form
// <prefix>__<tool>, so that a query that names a tool as its server does
// ranks it above one that only shares its words. Caseless scripts are not
// segmented: a run of CJK is one word. Terms over 80 bytes are dropped.
//
// Why this stemmer: github.com/kljensen/snowball is MIT, has no
// dependencies, was released in 2024, is tested against the Snowball
// vocabulary, and brings the Snowball stop list, so no list is kept here.
// github.com/blevesearch/snowballstem gives the same stems 2.6 times faster
// but has no stop list and no release since 2020; the index stems each
// distinct word once (a cache), so the speed does not show. Bleve itself
// took 5.2 s and 84 MB to index 5,000 synthetic tools (53 modules), against
// the 200 ms and 30 MB, and has no per-field BM25F.
//
// # Synonyms
//
// A query's terms bring in their synonyms (synonyms.go: general words of
// software, such as delete, remove, drop and wipe, or hover and
// mouse), which count a fifth as much as the query's own terms, 12 terms at
// most: a tool in other words is found, and one in the request's own words
// ranks first.
// Measured on the tuning split of bench/toolsearch, they took MRR from
// 0.551 to 0.563 and recall@10 from 0.753 to 0.781 (held out: 0.525 to
// 0.552, 0.749 to 0.773); at full weight they made it worse (0.491). A
// query's word that no visible tool has is the exception: it counts only
// through its synonyms, so they count in its place, as much as a word
// together (tuning MRR 0.566 to 0.582).
//
// # Ranking
//
// A search scores each tool that has a query term with BM25F: per-field
// term frequencies are weighted, normalised by the field's length against
// its average, added up and saturated once with K1, then weighted by the
// term's inverse document frequency:
//
//	score(d) = Σ_t idf(t) · w / (K1 + w)
//	w        = Σ_f Weight_f · tf(t,d,f) / (1 − B_f + B_f · len(d,f) / avglen_f)
//	idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// N is the number of tools and df(t) the number that have t in any field. A
// term repeated in the query counts once. Ties are broken by public name,
// then server, so results are deterministic.
//
// # Changes and concurrency
//
// The index is a list of immutable per-server segments, each with its own
// postings. [Index.Set] analyses one server's tools into a new segment and
// publishes a new snapshot that shares every other segment, so an update
// costs the size of that server's tools, not of the index. The corpus
// statistics (document frequencies, average field lengths) are computed
// from the segments at search time, so they are always those of the current
// contents: an index updated server by server gives the same scores as one
// built at once. Searches load the current snapshot atomically and never
// wait for a change; changes are serialized by a mutex held only while one
// is applied.
//
// # Bad input
//
// A query must have a word to search for ([ErrEmptyQuery]); one longer
// than [MaxQueryBytes] is searched by its first words ([CutQuery]), since
// models paste whole requests. A limit must be 1 or more ([ErrBadLimit]);
// there is no upper limit, since a result never holds more than the
// matching tools (design §2's search_tools takes 1 to 50, and the gateway
// checks that). A tool must have a non-empty name, unique within its
// server, and an input schema that is a JSON object ([ErrBadDoc]); a
// rejected change changes nothing. The walk of one schema is bounded in
// depth and size.
//
// # Visibility
//
// [Index.Search] takes a visible function; a tool it rejects is never
// returned and is left out of the statistics, so the scores a caller sees
// are those of an index of only the tools it may see.
package toolsearch
