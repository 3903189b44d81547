// Package sse reads and writes server-sent events (text/event-stream) as
// the WHATWG HTML standard defines them (§9.2 "Server-sent events"): every
// Go reader and writer of an event stream in Nexus goes through it, so the
// vendors' streams, the gateway's run streams and the host link agree on
// one reading of line endings, the byte-order mark, comments, `id` and
// `retry`.
package sse
