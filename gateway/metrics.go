package gateway

import (
	"context"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
)

// routeKey holds where labelRoute writes the API route a request matched.
type routeKey struct{}

// labelRoute records the route template an API request matched
// ("/v1/sessions/{session_id}/runs"), for withRoute.
func labelRoute(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if pat, ok := runtime.HTTPPattern(r.Context()); ok {
			if route, ok := r.Context().Value(routeKey{}).(*string); ok {
				*route = template(pat)
			}
		}
		next(w, r, params)
	}
}

// withRoute sits right inside the HTTP instrumentation and gives it, as the
// request's pattern, the route template the API matched, or else the
// pattern of the mux ("/healthz", "/v1/" for an unknown API path). Metrics
// are then labelled by template, never by a path with its ids, so the number
// of series stays fixed.
func withRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var route string
		inner := r.WithContext(context.WithValue(r.Context(), routeKey{}, &route))
		next.ServeHTTP(w, inner)
		if route == "" {
			route = inner.Pattern
		}
		r.Pattern = route
	})
}
