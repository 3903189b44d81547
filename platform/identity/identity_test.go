package identity

import (
	"context"
	"strings"
	"testing"
	"time"
)

const testKey = "identity-test-key-0123456789abcdef"

func TestAssertions(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	signer, err := NewSigner(testKey, "gateway", clock)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSigner("another-key-0123456789abcdef-xyzw", "gateway", clock)
	if err != nil {
		t.Fatal(err)
	}
	const aud = "nexus.agent.v1.OrchestratorService"
	good := signer.Sign("key:alice", aud)
	payload, sig, _ := strings.Cut(good, ".")
	tests := []struct {
		name      string
		assertion string
		audience  string
		at        time.Time
		wantUser  string
		wantErr   string
	}{
		{"good", good, aud, now, "key:alice", ""},
		{"still good near its end", good, aud, now.Add(AssertionTTL - time.Second), "key:alice", ""},
		{"expired", good, aud, now.Add(AssertionTTL), "", "expired"},
		{"for another service", good, "nexus.capability.v1.CapabilityService", now, "", "is for"},
		{"signed with another key", other.Sign("key:alice", aud), aud, now, "", "signature"},
		{"payload swapped", strings.Replace(payload, "a", "b", 1) + "." + sig, aud, now, "", "signature"},
		{"issued in the future", good, aud, now.Add(-2 * AssertionTTL), "", "future"},
		{"no user", signer.Sign("", aud), aud, now, "", "names no user"},
		{"malformed", "not-an-assertion", aud, now, "", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(testKey, func() time.Time { return tt.at })
			if err != nil {
				t.Fatal(err)
			}
			user, err := v.Verify(tt.assertion, tt.audience)
			if tt.wantErr == "" {
				if err != nil || user != tt.wantUser {
					t.Fatalf("Verify = %q, %v; want %q", user, err, tt.wantUser)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Verify = %q, %v; want an error with %q", user, err, tt.wantErr)
			}
		})
	}
	if _, err := NewSigner("short", "gateway", clock); err == nil || !strings.Contains(err.Error(), "NEXUS_INTERNAL_KEY") {
		t.Errorf("short key: %v, want an error naming NEXUS_INTERNAL_KEY", err)
	}
}

func TestAPIKeysAndCredentials(t *testing.T) {
	tests := []struct {
		name, keys string
		wantErr    string
	}{
		{"two users", "k1:alice,k2:bob", ""},
		{"one key twice", "k:alice,k:mallory", "listed twice"},
		{"no user", "k1:", "entry 1"},
		{"no colon", "k1:alice,nocolon", "entry 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseAPIKeys(tt.keys)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ParseAPIKeys(%q) = %v, want %q", tt.keys, err, tt.wantErr)
			}
		})
	}
	creds, err := NewCredentials(context.Background(), Config{APIKeys: "k1:alice,k2:bob"})
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{"k1": "key:alice", "k2": "key:bob", "k3": "", "": ""} {
		user, err := creds.Check(context.Background(), token)
		if user != want || (want == "") != (err != nil) {
			t.Errorf("Check(%q) = %q, %v; want %q", token, user, err, want)
		}
	}
}
