package redisstate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"nexus.local/services/orchestrator/state/redisstate"
)

func TestNewClientChoosesTheTopology(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		want    string
		wantErr string
	}{
		{name: "single server", url: "redis://127.0.0.1:6379/2", want: "*redis.Client"},
		{name: "tls single server", url: "rediss://user:secret@redis.internal:6380/0", want: "*redis.Client"},
		{name: "sentinel", url: "redis://127.0.0.1:26379/0?master_name=nexus&addr=127.0.0.1:26380", want: "*redis.Client"},
		{name: "cluster", url: "redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", want: "*redis.ClusterClient"},
		{name: "wrong scheme", url: "http://127.0.0.1:6379", wantErr: `scheme must be redis or rediss, got "http"`},
		{name: "unknown option", url: "redis://127.0.0.1:6379?colour=blue", wantErr: "colour"},
		{name: "password is not echoed", url: "postgres://u:hunter2@db:5432", wantErr: "xxxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redisstate.NewClient(tt.url)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("err = %v, want one mentioning %q without the password", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := typeName(c); got != tt.want {
				t.Fatalf("client is %s, want %s", got, tt.want)
			}
		})
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.Client:
		return "*redis.Client"
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	}
	return "other"
}

func TestOpenUnreachableServerNamesIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := redisstate.Open(ctx, "redis://:pw@127.0.0.1:1/0?dial_timeout=1s&max_retries=-1", redisstate.Options{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), ":pw@") {
		t.Fatalf("err = %v, want one naming the server without its password", err)
	}
}
