package config

import (
	"errors"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func ptr[T any](v T) *T { return &v }

// messages returns the messages of err, split when it is joined.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, messages(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func errorStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, messages(e)...)
	}
	return out
}

// allErrorsAre reports whether every error joined in err is an *Error.
func allErrorsAre(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !allErrorsAre(e) {
				return false
			}
		}
		return true
	}
	var e *Error
	return errors.As(err, &e)
}
