package cli

import (
	"strings"
	"testing"

	"nexus.local/platform/config"
)

// TestConnectTimeoutSetting holds NEXUS_CONNECT_TIMEOUT to a duration that
// can let an attempt succeed: a word or a negative value is refused with a
// message that names the setting, before anything is dialled.
func TestConnectTimeoutSetting(t *testing.T) {
	for _, tt := range []struct {
		value, want string
	}{
		{"soon", "NEXUS_CONNECT_TIMEOUT"},
		{"-1s", "NEXUS_CONNECT_TIMEOUT -1s: want a positive duration"},
	} {
		o := IO{Env: config.Map(map[string]string{"NEXUS_CONNECT_TIMEOUT": tt.value})}
		conn, _, err := dial(t.Context(), "127.0.0.1:1", o)
		if err == nil {
			conn.Close()
			t.Errorf("NEXUS_CONNECT_TIMEOUT=%s was accepted", tt.value)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NEXUS_CONNECT_TIMEOUT=%s: %v; want it to say %q", tt.value, err, tt.want)
		}
	}
	o := IO{Env: config.Map(map[string]string{"NEXUS_CONNECT_TIMEOUT": "1s"})}
	conn, _, err := dial(t.Context(), "127.0.0.1:1", o)
	if err != nil {
		t.Fatalf("NEXUS_CONNECT_TIMEOUT=1s: %v", err)
	}
	conn.Close()
}
