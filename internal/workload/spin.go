package workload

import "github.com/klockstat/klockstat/internal/eventfd"

// spinLoad contends a spinlock: the wait-queue lock of one shared eventfd
// that workers add to and drain (package eventfd, which klockstat's own
// check of spinlock visibility drives too).
type spinLoad struct {
	*eventfd.Shared
}

func newSpin(Options) (generator, error) {
	s, err := eventfd.Open()
	if err != nil {
		return nil, err
	}
	return spinLoad{s}, nil
}

func (s spinLoad) op(int) func() error { return s.Op() }
