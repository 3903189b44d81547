package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"nexus.local/platform/rpc"
)

// devValidity is how long nexus dev's certificates last: one working day and
// then some; they die with the process anyway.
const devValidity = 48 * time.Hour

// devSecurity is what nexus dev makes fresh at every start and keeps in
// memory: the internal key that signs identity assertions, a CA with one
// certificate for every loopback hop, and the host pairing secret.
type devSecurity struct {
	internalKey   string
	ca            *rpc.DevCA
	cert, key     []byte
	pairingSecret string
}

func newDevSecurity(now time.Time) (*devSecurity, error) {
	ca, err := rpc.NewDevCA(now, devValidity)
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.Issue("nexus-dev", now)
	if err != nil {
		return nil, err
	}
	internalKey, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	secret, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	return &devSecurity{internalKey: internalKey, ca: ca, cert: cert, key: key, pairingSecret: secret}, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}
