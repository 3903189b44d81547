package gateway

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"

	"nexus.local/gateway/route"
)

type routeCtxKey struct{}

// routeFrom is the route the front door matched for the request.
func routeFrom(ctx context.Context) *route.Route {
	r, _ := ctx.Value(routeCtxKey{}).(*route.Route)
	return r
}

// front is the door of every API request, in this order: the route it
// names (once, from the route table), its credential as that route admits
// it (before a byte of the body is read), the caller's request rate, then
// the body, read once against the route's limit and decoded once into the
// route's message.
func (g *Gateway) front(limiter *rateLimiter, bodyTimeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt := g.table.Match(r.Method, r.URL.Path)
		ctx, ok := g.auth.admit(w, r, rt)
		if !ok {
			return
		}
		r = r.WithContext(context.WithValue(ctx, routeCtxKey{}, rt))
		if !limiter.allow(w, r) {
			return
		}
		if r, ok = readLimited(w, r, rt, g.cfg.Limits, bodyTimeout); !ok {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decodedMarshaler is the routes' JSON marshaler, whose decoder takes the
// message the front door decoded rather than decode the body again.
type decodedMarshaler struct {
	runtime.Marshaler
}

func (m decodedMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	if b, ok := r.(*decodedBody); ok {
		return runtime.DecoderFunc(func(v any) error {
			if b.msg == nil {
				// An empty body: the request is its path and query.
				return io.EOF
			}
			to, ok := v.(proto.Message)
			if !ok {
				return m.Marshaler.NewDecoder(b.Reader).Decode(v)
			}
			proto.Merge(to, b.msg)
			return nil
		})
	}
	return m.Marshaler.NewDecoder(r)
}
