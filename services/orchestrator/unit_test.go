package orchestrator

import (
	"strings"
	"testing"
)

func TestLoadConfigRefusesBadLimits(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"zero light budget", Config{HeavyMaxTokens: 1, LightMaxTokens: 0, MaxToolResultChars: 1, MaxTurns: 1, ToolResultTimeout: 1, RunLease: 1, CompactAt: 0.5}, "NEXUS_LIGHT_MAX_TOKENS"},
		{"negative fix retries", Config{HeavyMaxTokens: 1, LightMaxTokens: 1, MaxToolResultChars: 1, MaxTurns: 1, MaxFixRetries: -1, ToolResultTimeout: 1, RunLease: 1, CompactAt: 0.5}, "NEXUS_MAX_FIX_RETRIES"},
		{"compaction past the window", Config{HeavyMaxTokens: 1, LightMaxTokens: 1, MaxToolResultChars: 1, MaxTurns: 1, ToolResultTimeout: 1, RunLease: 1, CompactAt: 2}, "NEXUS_COMPACT_AT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate() = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}
