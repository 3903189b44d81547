// Package redisclient opens the Redis that NEXUS_REDIS_URL names, for every
// process that shares state through it: one server (redis:// or rediss://),
// Sentinel (?master_name=) or Cluster (?addr= for each further node).
package redisclient

import (
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// New builds the universal client for rawURL without connecting.
func New(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("redis url %s: scheme must be redis or rediss, got %q", Redact(rawURL), u.Scheme)
	}
	q := u.Query()
	switch {
	case q.Has("master_name"):
		o, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parse sentinel url %s: %w", Redact(rawURL), err)
		}
		return redis.NewFailoverClient(o), nil
	case q.Has("addr"):
		o, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parse cluster url %s: %w", Redact(rawURL), err)
		}
		return redis.NewClusterClient(o), nil
	default:
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parse redis url %s: %w", Redact(rawURL), err)
		}
		return redis.NewClient(o), nil
	}
}

// Redact hides the password so URLs can appear in errors and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable url)"
	}
	return u.Redacted()
}
