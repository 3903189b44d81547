// Package imagetype holds the image types a host result may carry: the ones
// every model vendor takes and the model-router can scale. The gateway
// refuses any other when the result arrives, so a bad image never reaches a
// turn, where it would fail every later turn of the session.
package imagetype

import (
	"fmt"
	"slices"
	"strings"
)

// allowed lists the types, in the order a refusal names them.
func allowed() []string { return []string{"image/png", "image/jpeg"} }

// Check answers nil for an allowed type, or an error naming the type and
// the ones allowed.
func Check(mime string) error {
	if slices.Contains(allowed(), mime) {
		return nil
	}
	return fmt.Errorf("image mime_type %q: must be %s", mime, strings.Join(allowed(), " or "))
}
