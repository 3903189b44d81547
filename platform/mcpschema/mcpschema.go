// Package mcpschema infers the JSON schemas of an MCP tool's input and output
// from Go types in the form every MCP client reads: each schema has one type.
// The inference writes a Go slice, map or pointer as nullable (type
// ["null","array"]), which clients that map tool schemas onto a single-type
// dialect (the OpenAPI subset of Gemini's function declarations) reject or
// misread, and which the MCP Inspector's --strict reports.
package mcpschema

import (
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// For infers T's schema and gives every nullable type its one non-null type.
// That is true to what the servers send: their slices are never nil (an empty
// list is []) and their nil pointers are omitempty, so null is never on the
// wire; the SDK validates every output against the schema, so a null that
// slipped through would fail the call rather than pass unnoticed.
func For[T any]() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("infer the schema of %T: %w", *new(T), err)
	}
	single(s)
	return s, nil
}

// Bound sets the inclusive bounds of the integer property name of s, which
// For inferred only as the Go type's range.
func Bound(s *jsonschema.Schema, name string, lo, hi float64) error {
	p, ok := s.Properties[name]
	if !ok {
		return fmt.Errorf("schema has no property %q to bound", name)
	}
	p.Minimum, p.Maximum = &lo, &hi
	return nil
}

// single rewrites type ["null", X] to type X in s and every schema below it.
func single(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		for _, t := range s.Types {
			if t != "null" {
				s.Type = t
			}
		}
		s.Types = nil
	}
	for _, p := range s.Properties {
		single(p)
	}
	for _, d := range s.Defs {
		single(d)
	}
	for _, group := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
		for _, sub := range group {
			single(sub)
		}
	}
	single(s.Items)
	single(s.AdditionalProperties)
}
