package redisstate

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// sessionTTL is the expiry a session write sets: the retention, renewed by
// every write, or none when there is no retention.
func (s *Store) sessionTTL() time.Duration {
	if s.opts.SessionTTL > 0 {
		return s.opts.SessionTTL
	}
	return redis.KeepTTL
}
