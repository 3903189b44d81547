package orchestrator

import (
	"encoding/base64"
	"strings"

	"google.golang.org/grpc/codes"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
)

// pageSize applies a list's default and maximum page size.
func pageSize(req int32, def, most int) (int, error) {
	switch {
	case req < 0:
		return 0, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "page_size must not be negative, got %d", req)
	case req == 0:
		return def, nil
	case int(req) > most:
		return 0, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED, "page_size %d is over the limit of %d", req, most)
	}
	return int(req), nil
}

// cursorPrefix marks page tokens, so a token of another kind is refused
// rather than read as a position.
const cursorPrefix = "after:"

// paginate returns the page of items (in their order) that follows the item
// the token names, and the token of the next page. A cursor names the last
// item returned rather than an offset, so items added at the front while a
// client pages (new sessions) do not shift what it sees next.
func paginate[T any](items []T, key func(T) string, size int, token string) ([]T, string, error) {
	start := 0
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || !strings.HasPrefix(string(raw), cursorPrefix) {
			return nil, "", refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_PAGE_TOKEN, "page_token is not one this server gave out; pass next_page_token of the previous page")
		}
		after := strings.TrimPrefix(string(raw), cursorPrefix)
		start = -1
		for i, it := range items {
			if key(it) == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, "", refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_STALE_PAGE_TOKEN, "page_token names %s, which is gone; list again from the first page", after)
		}
	}
	end := min(start+size, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + key(items[end-1])))
	}
	return items[start:end], next, nil
}
