// Package hostkit embeds what every host add-in shares in Python, so Go
// launchers can place it beside the add-in they start.
package hostkit

import _ "embed"

// linkScript is the host link client (link.py).
//
//go:embed link.py
var linkScript []byte

// LinkScript returns a copy of the link client's source.
func LinkScript() []byte { return append([]byte(nil), linkScript...) }
