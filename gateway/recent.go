package gateway

import (
	"crypto/sha256"
	"sync"
	"time"
)

// passedFor is how long a credential that passed stays usable from an
// address throttled for failed authentications.
const passedFor = 10 * time.Minute

// maxPassed bounds the credentials remembered; past it, a new one is not
// remembered until old ones expire.
const maxPassed = 100000

// recentSet remembers digests of credentials for a while.
type recentSet struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu   sync.Mutex
	seen map[[sha256.Size]byte]time.Time
}

func newRecentSet(ttl time.Duration, max int, now func() time.Time) *recentSet {
	return &recentSet{ttl: ttl, max: max, now: now, seen: map[[sha256.Size]byte]time.Time{}}
}

// add remembers token from now on for the set's time.
func (s *recentSet) add(token string) {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if _, ok := s.seen[key]; !ok && len(s.seen) >= s.max {
		for k, t := range s.seen {
			if now.Sub(t) > s.ttl {
				delete(s.seen, k)
			}
		}
		if len(s.seen) >= s.max {
			return
		}
	}
	s.seen[key] = now
}

// has says whether token was added within the set's time.
func (s *recentSet) has(token string) bool {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.seen[key]
	return ok && s.now().Sub(t) <= s.ttl
}
