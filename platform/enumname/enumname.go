// Package enumname gives the short, lower-case names of proto enum values
// (TURN_ERROR_CODE_RATE_LIMITED: "rate_limited") that metrics labels, traces,
// configuration files and public string fields use, so those names come from
// the enum alone and are never written out a second time.
package enumname

import (
	"strings"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Short is the value's name without its enum's prefix, in lower case; ""
// for the zero value or a number the enum does not define.
func Short(e protoreflect.Enum) string {
	if e.Number() == 0 {
		return ""
	}
	v := e.Descriptor().Values().ByNumber(e.Number())
	if v == nil {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(string(v.Name()), prefix(e.Descriptor())))
}

// Parse is the value whose Short name is name, and false when the enum has
// none.
func Parse(d protoreflect.EnumDescriptor, name string) (protoreflect.EnumNumber, bool) {
	if name == "" {
		return 0, false
	}
	v := d.Values().ByName(protoreflect.Name(prefix(d) + strings.ToUpper(name)))
	if v == nil || v.Number() == 0 {
		return 0, false
	}
	return v.Number(), true
}

// Names are the Short names of every value but the zero one, in number
// order, for an error that lists what is allowed.
func Names(d protoreflect.EnumDescriptor) []string {
	var out []string
	vals := d.Values()
	for i := range vals.Len() {
		v := vals.Get(i)
		if v.Number() != 0 {
			out = append(out, strings.ToLower(strings.TrimPrefix(string(v.Name()), prefix(d))))
		}
	}
	return out
}

// prefix is the enum's name in upper snake case and an underscore, which
// buf's lint (ENUM_VALUE_PREFIX) makes every value start with.
func prefix(d protoreflect.EnumDescriptor) string {
	var b strings.Builder
	for i, r := range string(d.Name()) {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	b.WriteByte('_')
	return b.String()
}

// Camel is Short in CamelCase (EXEC_CONDITION_REVISION_CHANGED:
// "RevisionChanged"), as a host runtime names its conditions.
func Camel(e protoreflect.Enum) string {
	var b strings.Builder
	for _, part := range strings.Split(Short(e), "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// ParseCamel is the value whose Camel name is name, and false when the enum
// has none.
func ParseCamel(d protoreflect.EnumDescriptor, name string) (protoreflect.EnumNumber, bool) {
	var snake strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) && i > 0 {
			snake.WriteByte('_')
		}
		snake.WriteRune(unicode.ToLower(r))
	}
	return Parse(d, snake.String())
}
