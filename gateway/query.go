package gateway

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// strictQuery refuses query parameters the route's request message has no
// field for, as the body decoding refuses unknown fields: a misspelt
// ?pagesize=2 is a 400 naming it, not a first page of the default size.
// grpc-gateway keeps the parser process-wide; every mux of the gateway
// wants this one.
type strictQuery struct{ runtime.DefaultQueryParser }

func (q *strictQuery) Parse(msg proto.Message, values url.Values, filter *utilities.DoubleArray) error {
	md := msg.ProtoReflect().Descriptor()
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !hasField(md, strings.Split(fieldPath(k), ".")) {
			return fmt.Errorf("unknown query parameter %q: %s takes %s", k, routeName(msg), fieldList(md))
		}
	}
	return q.DefaultQueryParser.Parse(msg, values, filter)
}

// fieldPath is the field a query parameter names: a map entry's parameter,
// `labels[key]`, names the map. It reads the key as grpc-gateway's parser
// does (the text before the last '[' of a name ending in ']'), without a
// regular expression compiled for every parameter of every request.
func fieldPath(param string) string {
	if i := strings.LastIndexByte(param, '['); i >= 0 && strings.HasSuffix(param, "]") {
		return param[:i]
	}
	return param
}

// hasField says whether path names a field of md, by proto or JSON name.
func hasField(md protoreflect.MessageDescriptor, path []string) bool {
	for i, name := range path {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			fd = md.Fields().ByJSONName(name)
		}
		if fd == nil {
			return false
		}
		if i == len(path)-1 {
			return true
		}
		if fd.Message() == nil || fd.IsList() {
			return false
		}
		md = fd.Message()
	}
	return false
}

// routeName names the request in an error, e.g. ListSessions.
func routeName(msg proto.Message) string {
	return strings.TrimSuffix(string(msg.ProtoReflect().Descriptor().Name()), "Request")
}

// fieldList lists the JSON names of md's fields.
func fieldList(md protoreflect.MessageDescriptor) string {
	var names []string
	for i := range md.Fields().Len() {
		names = append(names, md.Fields().Get(i).JSONName())
	}
	if len(names) == 0 {
		return "no query parameters"
	}
	return strings.Join(names, ", ")
}
