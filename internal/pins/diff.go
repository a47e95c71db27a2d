package pins

import (
	"encoding/json"
	"slices"
	"strconv"
)

// The fields of a [Definition], in the order a [Change] lists them.
const (
	FieldName         = "name"
	FieldTitle        = "title"
	FieldDescription  = "description"
	FieldInputSchema  = "inputSchema"
	FieldOutputSchema = "outputSchema"
	FieldAnnotations  = "annotations"
)

// Change is what differs between two definitions of a tool, field by field.
// Its zero value means none.
type Change struct {
	// Fields are the fields that changed, in the order of the Field
	// constants.
	Fields []string `json:"fields,omitempty"`

	Title        *TextChange   `json:"title,omitempty"`
	Description  *TextChange   `json:"description,omitempty"`
	InputSchema  *SchemaChange `json:"inputSchema,omitempty"`
	OutputSchema *SchemaChange `json:"outputSchema,omitempty"`
	// Hints are the annotations that changed, in the order title,
	// readOnlyHint, destructiveHint, idempotentHint, openWorldHint.
	Hints []HintChange `json:"hints,omitempty"`
}

// TextChange is a text field's old and new value.
type TextChange struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// SchemaChange is how a schema changed: the names of the top-level
// properties added, removed and changed, the names added to and removed from
// "required", and the other top-level keywords that changed (such as
// "type" or "$defs"). Each list is sorted. A schema that appeared or went
// away has Added or Removed true.
type SchemaChange struct {
	Added           bool     `json:"added,omitempty"`
	Removed         bool     `json:"removed,omitempty"`
	Properties      Names    `json:"properties,omitzero"`
	RequiredAdded   []string `json:"requiredAdded,omitempty"`
	RequiredRemoved []string `json:"requiredRemoved,omitempty"`
	Keywords        []string `json:"keywords,omitempty"`
}

// Names are names added, removed and changed.
type Names struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// HintChange is one annotation that changed. Old and New are "true",
// "false" or "unset" for a hint, the text for the title.
type HintChange struct {
	Hint string `json:"hint"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// Compare returns what changed from old to new.
func Compare(old, new Definition) Change {
	var c Change
	if old.Name != new.Name {
		c.Fields = append(c.Fields, FieldName)
	}
	if old.Title != new.Title {
		c.Fields = append(c.Fields, FieldTitle)
		c.Title = &TextChange{Old: old.Title, New: new.Title}
	}
	if old.Description != new.Description {
		c.Fields = append(c.Fields, FieldDescription)
		c.Description = &TextChange{Old: old.Description, New: new.Description}
	}
	if !equalJSON(old.InputSchema, new.InputSchema) {
		c.Fields = append(c.Fields, FieldInputSchema)
		c.InputSchema = compareSchemas(old.InputSchema, new.InputSchema)
	}
	if !equalJSON(old.OutputSchema, new.OutputSchema) {
		c.Fields = append(c.Fields, FieldOutputSchema)
		c.OutputSchema = compareSchemas(old.OutputSchema, new.OutputSchema)
	}
	if old.Annotations == nil != (new.Annotations == nil) ||
		old.Annotations != nil && !annotationsEqual(*old.Annotations, *new.Annotations) {
		c.Fields = append(c.Fields, FieldAnnotations)
		oh, nh := hints(old.Annotations), hints(new.Annotations)
		for i := range oh {
			if oh[i] != nh[i] {
				c.Hints = append(c.Hints, HintChange{Hint: hintNames[i], Old: oh[i], New: nh[i]})
			}
		}
	}
	return c
}

func annotationsEqual(a, b Annotations) bool {
	return a.Title == b.Title && a.ReadOnlyHint == b.ReadOnlyHint && a.IdempotentHint == b.IdempotentHint &&
		ptrEqual(a.DestructiveHint, b.DestructiveHint) && ptrEqual(a.OpenWorldHint, b.OpenWorldHint)
}

func ptrEqual(a, b *bool) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

var hintNames = [...]string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// hints are a's values in the order of hintNames; no annotations leave every
// hint unset.
func hints(a *Annotations) [len(hintNames)]string {
	const unset = "unset"
	if a == nil {
		return [...]string{"", unset, unset, unset, unset}
	}
	opt := func(p *bool) string {
		if p == nil {
			return unset
		}
		return strconv.FormatBool(*p)
	}
	return [...]string{a.Title, strconv.FormatBool(a.ReadOnlyHint), opt(a.DestructiveHint),
		strconv.FormatBool(a.IdempotentHint), opt(a.OpenWorldHint)}
}

// compareSchemas tells how two schemas that differ differ. A schema that is
// not a JSON object is compared as a whole (under the keyword "").
func compareSchemas(old, new json.RawMessage) *SchemaChange {
	sc := &SchemaChange{Added: len(old) == 0, Removed: len(new) == 0}
	var om, nm map[string]json.RawMessage
	errOld := unmarshalObject(old, &om)
	errNew := unmarshalObject(new, &nm)
	if errOld != nil || errNew != nil {
		sc.Keywords = []string{""}
		return sc
	}
	var op, np map[string]json.RawMessage
	if unmarshalObject(om["properties"], &op) != nil || unmarshalObject(nm["properties"], &np) != nil {
		op, np = nil, nil
		if !equalJSON(om["properties"], nm["properties"]) {
			sc.Keywords = append(sc.Keywords, "properties")
		}
	}
	sc.Properties = compareMaps(op, np)
	var or, nr []string
	if json.Unmarshal(orNull(om["required"]), &or) != nil || json.Unmarshal(orNull(nm["required"]), &nr) != nil {
		or, nr = nil, nil
		if !equalJSON(om["required"], nm["required"]) {
			sc.Keywords = append(sc.Keywords, "required")
		}
	}
	sc.RequiredAdded, sc.RequiredRemoved = setDiff(nr, or), setDiff(or, nr)
	for k, v := range om {
		if k != "properties" && k != "required" && !equalJSON(v, nm[k]) {
			sc.Keywords = append(sc.Keywords, k)
		}
	}
	for k := range nm {
		if _, ok := om[k]; !ok && k != "properties" && k != "required" {
			sc.Keywords = append(sc.Keywords, k)
		}
	}
	slices.Sort(sc.Keywords)
	return sc
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// unmarshalObject decodes a JSON object into m; absent is an empty object.
func unmarshalObject(b json.RawMessage, m *map[string]json.RawMessage) error {
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, m)
}

func compareMaps(old, new map[string]json.RawMessage) Names {
	var n Names
	for k, v := range old {
		nv, ok := new[k]
		switch {
		case !ok:
			n.Removed = append(n.Removed, k)
		case !equalJSON(v, nv):
			n.Changed = append(n.Changed, k)
		}
	}
	for k := range new {
		if _, ok := old[k]; !ok {
			n.Added = append(n.Added, k)
		}
	}
	slices.Sort(n.Added)
	slices.Sort(n.Removed)
	slices.Sort(n.Changed)
	return n
}

// setDiff is the sorted names in a and not in b, each once.
func setDiff(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var d []string
	for _, s := range a {
		if !in[s] {
			in[s] = true
			d = append(d, s)
		}
	}
	slices.Sort(d)
	return d
}
