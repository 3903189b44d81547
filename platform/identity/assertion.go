package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// AssertionTTL is how long a signed assertion is good for: long enough for
// clock skew between pods, short enough that a captured one is soon useless.
const AssertionTTL = time.Minute

// MinInternalKeyBytes is the shortest internal key accepted.
const MinInternalKeyBytes = 32

// claims is what an assertion says: who acts (sub), which service signed it
// (iss), which gRPC service it is for (aud) and when it expires.
type claims struct {
	Sub string `json:"sub"`
	Iss string `json:"iss"`
	Aud string `json:"aud"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
}

// Signer makes assertions with the internal key.
type Signer struct {
	key     []byte
	service string
	now     func() time.Time
}

// NewSigner returns a Signer for the service named service.
func NewSigner(key, service string, now func() time.Time) (*Signer, error) {
	if len(key) < MinInternalKeyBytes {
		return nil, fmt.Errorf("NEXUS_INTERNAL_KEY is %d bytes, want at least %d", len(key), MinInternalKeyBytes)
	}
	return &Signer{key: []byte(key), service: service, now: now}, nil
}

// Sign returns an assertion that user calls audience (a gRPC service name).
func (s *Signer) Sign(user, audience string) string {
	now := s.now()
	body, _ := json.Marshal(claims{Sub: user, Iss: s.service, Aud: audience, Iat: now.Unix(), Exp: now.Add(AssertionTTL).Unix()})
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(mac(s.key, payload))
}

// Verifier checks assertions made with the internal key.
type Verifier struct {
	key []byte
	now func() time.Time
}

// NewVerifier returns a Verifier for key.
func NewVerifier(key string, now func() time.Time) (*Verifier, error) {
	if len(key) < MinInternalKeyBytes {
		return nil, fmt.Errorf("NEXUS_INTERNAL_KEY is %d bytes, want at least %d", len(key), MinInternalKeyBytes)
	}
	return &Verifier{key: []byte(key), now: now}, nil
}

// Verify returns the user an assertion names when its signature is good, it
// has not expired and it was made for audience.
func (v *Verifier) Verify(assertion, audience string) (string, error) {
	payload, sig, ok := strings.Cut(assertion, ".")
	if !ok {
		return "", errors.New("assertion is malformed")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(v.key, payload)) {
		return "", errors.New("assertion signature does not match the internal key")
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", errors.New("assertion is malformed")
	}
	var c claims
	if err := json.Unmarshal(body, &c); err != nil {
		return "", errors.New("assertion is malformed")
	}
	now := v.now().Unix()
	switch {
	case c.Sub == "":
		return "", errors.New("assertion names no user")
	case c.Aud != audience:
		return "", fmt.Errorf("assertion is for %s, not %s", c.Aud, audience)
	case now >= c.Exp:
		return "", errors.New("assertion has expired")
	case c.Iat > now+int64(AssertionTTL/time.Second):
		return "", errors.New("assertion is issued in the future")
	}
	return c.Sub, nil
}

func mac(key []byte, payload string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(payload))
	return h.Sum(nil)
}
