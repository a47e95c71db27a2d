package toolsearch

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// segment is the immutable index of one server's tools.
type segment struct {
	server   string
	docs     []docEntry           // sorted by name
	postings map[string][]posting // term → the docs that have it, by doc
	fieldLen [numFields]int       // total terms per field over docs
}

// docEntry is one indexed tool.
type docEntry struct {
	name string
	lens [numFields]uint32 // terms per field
}

// posting is one term's frequencies in one doc, by field; they saturate at
// the maximum of uint16, far beyond where BM25 stops caring.
type posting struct {
	doc uint32 // index in segment.docs
	tf  [numFields]uint16
}

// buildLocked analyses the tools of one server into a segment; no tools
// give nil. x.mu must be held (the analyzer's cache is shared).
func (x *Index) buildLocked(server string, tools []Doc) (*segment, error) {
	if server == "" {
		return nil, fmt.Errorf("%w: empty server name", ErrBadDoc)
	}
	if len(tools) == 0 {
		return nil, nil
	}
	order := make([]int, len(tools))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(tools[a].Name, tools[b].Name) })
	b := &segmentBuilder{
		an:  &x.an,
		seg: &segment{server: server, docs: make([]docEntry, 0, len(tools)), postings: make(map[string][]posting)},
		tf:  make(map[string]*[numFields]uint16),
	}
	for _, i := range order {
		if err := b.add(&tools[i]); err != nil {
			return nil, fmt.Errorf("%w: server %q: %v", ErrBadDoc, server, err)
		}
	}
	for term, list := range b.seg.postings {
		b.seg.postings[term] = slices.Clip(list)
	}
	return b.seg, nil
}

// segmentBuilder adds docs, in order of name, to a segment.
type segmentBuilder struct {
	an  *analyzer
	seg *segment
	// Of the doc being added: its term frequencies by field, and its
	// terms in order of first appearance (so postings are built in a
	// deterministic order).
	tf    map[string]*[numFields]uint16
	terms []string
	// The terms of the last Context analysed, kept for the next doc: a
	// server's tools share it.
	context sharedText
}

func (b *segmentBuilder) add(doc *Doc) error {
	docs := b.seg.docs
	switch {
	case doc.Name == "":
		return fmt.Errorf("a tool has an empty name")
	case len(docs) > 0 && docs[len(docs)-1].name == doc.Name:
		return fmt.Errorf("tool %q appears twice", doc.Name)
	}
	schema, err := schemaMap(doc.InputSchema)
	if err != nil {
		return fmt.Errorf("tool %q: input schema: %w", doc.Name, err)
	}
	b.seg.docs = append(docs, docEntry{name: doc.Name})
	entry := &b.seg.docs[len(b.seg.docs)-1]
	clear(b.tf)
	b.terms = b.terms[:0]
	add := func(f field) func(string) {
		return func(term string) {
			c := b.tf[term]
			if c == nil {
				c = new([numFields]uint16)
				b.tf[term] = c
				b.terms = append(b.terms, term)
			}
			if c[f] < math.MaxUint16 {
				c[f]++
			}
			if entry.lens[f] < math.MaxUint32 {
				entry.lens[f]++
			}
		}
	}
	b.an.analyze(doc.Name, add(fieldName))
	if _, tool, ok := strings.Cut(doc.Name, "__"); ok {
		if t := b.an.whole(tool); t != "" {
			add(fieldName)(t)
		}
	}
	b.an.analyze(doc.Title, add(fieldTitle))
	b.an.analyze(doc.Description, add(fieldDescription))
	walkSchema(schema,
		func(name string) { b.an.analyze(name, add(fieldParamNames)) },
		func(text string) { b.an.analyze(text, add(fieldParamDescriptions)) })
	b.context.add(b.an, doc.Context, add(fieldContext))

	d := uint32(len(b.seg.docs) - 1)
	for _, term := range b.terms {
		b.seg.postings[term] = append(b.seg.postings[term], posting{doc: d, tf: *b.tf[term]})
	}
	for f, n := range entry.lens {
		b.seg.fieldLen[f] += int(n)
	}
	return nil
}

// sharedText is text that consecutive docs share, and its terms: analysed
// once for them all.
type sharedText struct {
	text  string
	terms []string
}

// add calls emit for each term of text, analysing it only if it is not the
// text of the last call.
func (s *sharedText) add(an *analyzer, text string, emit func(term string)) {
	if text != s.text || s.terms == nil {
		s.text, s.terms = text, []string{}
		an.analyze(text, func(t string) { s.terms = append(s.terms, t) })
	}
	for _, t := range s.terms {
		emit(t)
	}
}
