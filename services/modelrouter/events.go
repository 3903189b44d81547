package modelrouter

import (
	"errors"
	"io"

	"nexus.local/platform/sse"
)

// maxSSELine bounds one line of a stream; vendors put whole JSON objects
// (with encrypted reasoning) on one data line.
const maxSSELine = 32 << 20

// vendorStream reads a vendor's server-sent events. A last event whose
// blank line never came is taken as its whole lines hold it: a vendor's
// event is one line of JSON, and a turn that was really cut short still
// lacks the event that ends it.
type vendorStream struct {
	r    *sse.Reader
	done bool
}

func newVendorStream(body io.Reader) *vendorStream {
	return &vendorStream{r: sse.NewReader(body, maxSSELine)}
}

// next returns the next event, or io.EOF after the last.
func (v *vendorStream) next() (sse.Event, error) {
	if v.done {
		return sse.Event{}, io.EOF
	}
	ev, err := v.r.Next()
	if errors.Is(err, sse.ErrCut) && len(ev.Data) > 0 {
		v.done = true
		return ev, nil
	}
	return ev, err
}
