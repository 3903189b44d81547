package statetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisURL is the shared test server; NEXUS_TEST_REDIS_URL overrides the
// default 127.0.0.1:6379 that make test starts.
func RedisURL() string {
	if u := os.Getenv("NEXUS_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Prefix returns a key prefix that no other test uses and deletes every key
// under it on url when the test ends, so tests share one server safely.
func Prefix(t testing.TB, url string) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	prefix := fmt.Sprintf("nexustest:%s:%d:", name, time.Now().UnixNano())
	t.Cleanup(func() {
		if err := deletePrefix(url, prefix); err != nil {
			t.Errorf("clean up keys under %s: %v", prefix, err)
		}
	})
	return prefix
}

func deletePrefix(url, prefix string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := rdb.Del(ctx, keys[:n]...).Err(); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}
