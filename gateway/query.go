package gateway

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// queryRoutes maps each route grpc-gateway fills from the query string (an
// RPC whose HTTP rule has no body "*"), by queryKey, to its request
// message. The generated handlers ignore a parameter the message has no
// field for; strictQuery refuses it instead.
type queryRoutes map[string]protoreflect.MessageDescriptor

// queryKey is a route's key in queryRoutes: its method and path template,
// as the HTTP rules and the route table write it.
func queryKey(method, template string) string { return method + " " + template }

// apiServices are the services the gateway's API serves.
func apiServices() []protoreflect.ServiceDescriptor {
	var out []protoreflect.ServiceDescriptor
	for _, f := range []protoreflect.FileDescriptor{agentv1.File_nexus_agent_v1_orchestrator_proto, agentv1.File_nexus_agent_v1_hostlink_proto} {
		for i := range f.Services().Len() {
			out = append(out, f.Services().Get(i))
		}
	}
	return out
}

// newQueryRoutes reads the routes from the services' google.api.http rules.
func newQueryRoutes(services ...protoreflect.ServiceDescriptor) queryRoutes {
	q := queryRoutes{}
	for _, sd := range services {
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			rule, ok := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
			if !ok || rule == nil || rule.GetBody() == "*" {
				continue
			}
			method, path := httpRule(rule)
			if method != "" {
				q[queryKey(method, path)] = md.Input()
			}
		}
	}
	return q
}

// httpRule is the method and path template of a rule.
func httpRule(r *annotations.HttpRule) (method, path string) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete
	}
	return "", ""
}

// strictQuery refuses query parameters the route's request message has no
// field for, as the body decoding refuses unknown fields: a misspelt
// ?pagesize=2 is a 400 naming it, not a first page of the default size.
// It is a middleware of the API's mux rather than grpc-gateway's query
// parser option, because that option sets a package variable of
// grpc-gateway's in every mux it builds: two gateways in one process (the
// tests run many side by side) would race on it.
func (q queryRoutes) strictQuery(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if pat, ok := runtime.HTTPPattern(r.Context()); ok {
			if md, ok := q[queryKey(r.Method, template(pat))]; ok {
				if err := unknownParameter(md, r.URL.Query()); err != nil {
					writeStatusError(r.Context(), w, status.Error(codes.InvalidArgument, err.Error()))
					return
				}
			}
		}
		next(w, r, params)
	}
}

// template is a matched pattern as the HTTP rules and the route table
// write it: /v1/sessions/{session_id}, not {session_id=*}.
func template(pat runtime.Pattern) string {
	return strings.ReplaceAll(pat.String(), "=*}", "}")
}

// unknownParameter names the first parameter md has no field for.
func unknownParameter(md protoreflect.MessageDescriptor, values url.Values) error {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !hasField(md, strings.Split(fieldPath(k), ".")) {
			return fmt.Errorf("unknown query parameter %q: %s takes %s", k, routeName(md), fieldList(md))
		}
	}
	return nil
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
func routeName(md protoreflect.MessageDescriptor) string {
	return strings.TrimSuffix(string(md.Name()), "Request")
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
