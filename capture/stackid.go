package capture

// SharedStack identifies a stack by the slice that holds it, not by its frames: Parse decodes the
// records of one stack into one shared slice, so that what is worked out per stack (its interned
// frames, its path in a flame graph) can be looked up by a small key, once per record, rather than
// frame by frame. Two slices of equal frames have different ids; that costs a lookup, never a
// wrong answer.
type SharedStack struct {
	first *string
	len   int
}

// SharedStackOf returns the id of stack, or false for an empty stack, which has no memory to tell it
// by.
func SharedStackOf(stack []string) (SharedStack, bool) {
	if len(stack) == 0 {
		return SharedStack{}, false
	}
	return SharedStack{&stack[0], len(stack)}, true
}
