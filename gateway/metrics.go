package gateway

import (
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
)

// labelRoute gives the request's metrics the route template it matched
// ("/v1/sessions/{session_id}/runs"), never the path with its ids, so the
// number of series stays fixed. Requests that match no API route keep the
// mux's own pattern.
func labelRoute(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if pat, ok := runtime.HTTPPattern(r.Context()); ok {
			if l, ok := otelhttp.LabelerFromContext(r.Context()); ok {
				l.Add(attribute.String("http.route", pat.String()))
			}
		}
		next(w, r, params)
	}
}
