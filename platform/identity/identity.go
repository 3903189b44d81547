// Package identity carries the authenticated caller from the gateway to the
// services. The gateway authenticates and sets the user; services only read it.
package identity

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// MetadataKey is the gRPC metadata key that names the caller.
const MetadataKey = "x-nexus-user"

// LocalUser is the caller when nobody authenticated: nexus dev on loopback,
// or the CLI talking to its own process.
const LocalUser = "local"

// FromIncoming returns the caller named in a server's incoming metadata, or
// LocalUser when none is named.
func FromIncoming(ctx context.Context) string {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(MetadataKey); len(v) > 0 && v[0] != "" {
			return v[0]
		}
	}
	return LocalUser
}

// Outgoing returns ctx with user named in the outgoing metadata.
func Outgoing(ctx context.Context, user string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, user)
}
