package toolsearch

import (
	"fmt"
	"math"
)

// field is one of the indexed fields of a tool.
type field uint8

const (
	fieldName field = iota
	fieldTitle
	fieldDescription
	fieldParamNames
	fieldParamDescriptions
	fieldContext
	numFields
)

var fieldNames = [numFields]string{"Name", "Title", "Description", "ParamNames", "ParamDescriptions", "Context"}

// FieldParams are the BM25F parameters of one field.
type FieldParams struct {
	// Weight multiplies the field's term frequencies before they are added
	// up across fields; 0 leaves the field out.
	Weight float64
	// B is the length normalisation, from 0 (none) to 1 (full): how much a
	// term counts less in a field longer than the field's average.
	B float64
}

// Options are the ranking parameters of an [Index]. Start from
// [DefaultOptions] and change what you need: a zero value is meaningful here
// (a weight of 0 leaves a field out, a B of 0 turns normalisation off), so a
// zero field does not stand for a default.
type Options struct {
	// K1 is the term-frequency saturation: the larger, the more a repeated
	// term keeps adding. It must be positive.
	K1 float64
	// The fields: the public name split into words (and whole), the title,
	// the description, the input schema's property names, and the schema's
	// descriptions, titles and string enum values.
	Name, Title, Description, ParamNames, ParamDescriptions FieldParams
	// Context is what is known of the tool's server ([Doc.Context]): its
	// name and description in the config, its package, its serverInfo.
	Context FieldParams
}

// DefaultOptions returns the default ranking parameters: K1 1.2, and for the
// fields, weight and B:
//
//	Name               3.0  0.3   the words a tool is called by; short, so little normalisation
//	Title              2.0  0.3   a human label, as short
//	Description        1.0  0.75  prose of very uneven length, so full normalisation
//	ParamNames         1.0  0.5   what the tool takes ("path", "query", "owner")
//	ParamDescriptions  0.5  0.75  long, repetitive prose about the arguments
//	Context            1.0  0.5   what the server is (config key and description, package, serverInfo):
//	                              short, and a description in the config is written to be found by
//
// K1 and the Description's B are the usual BM25 values. The weights rank a
// match in what a tool is called above one in what it says about itself; the
// retrieval benchmark is where they are measured and tuned.
func DefaultOptions() *Options {
	return &Options{
		K1:                1.2,
		Name:              FieldParams{Weight: 3, B: 0.3},
		Title:             FieldParams{Weight: 2, B: 0.3},
		Description:       FieldParams{Weight: 1, B: 0.75},
		ParamNames:        FieldParams{Weight: 1, B: 0.5},
		ParamDescriptions: FieldParams{Weight: 0.5, B: 0.75},
		Context:           FieldParams{Weight: 1, B: 0.5},
	}
}

// params are validated options, by field.
type params struct {
	k1     float64
	fields [numFields]FieldParams
}

func (o *Options) params() (params, error) {
	p := params{k1: o.K1, fields: [numFields]FieldParams{o.Name, o.Title, o.Description, o.ParamNames, o.ParamDescriptions, o.Context}}
	if !(p.k1 > 0) || math.IsInf(p.k1, 0) {
		return params{}, fmt.Errorf("%w: K1 is %v, want a finite number above 0", ErrBadOptions, p.k1)
	}
	anyWeight := false
	for f, fp := range p.fields {
		if !(fp.Weight >= 0) || math.IsInf(fp.Weight, 0) {
			return params{}, fmt.Errorf("%w: %s.Weight is %v, want a finite number of 0 or more", ErrBadOptions, fieldNames[f], fp.Weight)
		}
		if !(fp.B >= 0 && fp.B <= 1) {
			return params{}, fmt.Errorf("%w: %s.B is %v, want 0 to 1", ErrBadOptions, fieldNames[f], fp.B)
		}
		anyWeight = anyWeight || fp.Weight > 0
	}
	if !anyWeight {
		return params{}, fmt.Errorf("%w: every field has weight 0", ErrBadOptions)
	}
	return p, nil
}
