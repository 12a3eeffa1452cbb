package export

// ownersFrame is the root frame of the owners' stacks in folded stacks.
const ownersFrame = "[lock owners]"
