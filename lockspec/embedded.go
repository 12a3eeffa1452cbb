package lockspec

import _ "embed"

// embedded is the catalogue klockstat ships: locks.json at the top of the
// repository is a link to this file, so users find it where they look for it
// while the package that parses it owns it.
//
//go:embed locks.json
var embedded []byte

// EmbeddedSource names the embedded catalogue in messages.
const EmbeddedSource = "locks.json"

// Embedded returns a copy of the embedded catalogue's text.
func Embedded() []byte { return append([]byte(nil), embedded...) }

// Default parses the embedded catalogue. It cannot fail in a release: the
// tests parse the same bytes.
func Default() (*Spec, error) { return Parse(EmbeddedSource, embedded) }
