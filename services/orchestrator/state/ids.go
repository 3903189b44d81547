package state

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a random id with a readable prefix.
func NewID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// NewToken returns a one-time result token.
func NewToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
