package cli

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// A run's --metric is looked for in the whole of the command's output, line by line as it is
// written, in bounded memory: each of stdout and stderr keeps its unfinished line only, at most
// maxMetricLine bytes of it. The last line with a match wins, across both streams.

// maxMetricLine is the longest prefix of a line --metric is matched against.
const maxMetricLine = 64 << 10

// metricMatch is the last match of --metric in a run's output.
type metricMatch struct {
	re    *regexp.Regexp
	mu    sync.Mutex
	found bool
	group string // the first group of the last match
	line  string // the line it was in
}

// stream is a writer of one output stream, which feeds whole lines to m.
func (m *metricMatch) stream() *lineStream {
	return &lineStream{m: m}
}

// lineStream cuts one stream into lines for its metricMatch.
type lineStream struct {
	m    *metricMatch
	line []byte
	long bool // the current line went past maxMetricLine: the rest is dropped
}

func (s *lineStream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxMetricLine - len(s.line); !s.long {
			if len(chunk) > room {
				chunk, s.long = chunk[:room], true
			}
			s.line = append(s.line, chunk...)
		}
		if i < 0 {
			break
		}
		s.m.match(s.line)
		s.line, s.long = s.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// Close matches the stream's last line, one without a newline.
func (s *lineStream) Close() error {
	if len(s.line) > 0 {
		s.m.match(s.line)
		s.line = s.line[:0]
	}
	return nil
}

func (m *metricMatch) match(line []byte) {
	sub := m.re.FindAllSubmatch(line, -1)
	if len(sub) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.found, m.group = true, string(sub[len(sub)-1][1])
	m.line = strings.ToValidUTF8(strings.TrimRight(string(line), "\r"), "?")
}

// value is the metric and the line it was read from, or why the run has none: no match, a match
// that is no number, or 0, which is no work.
func (m *metricMatch) value() (v *float64, line, failed string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.found {
		return nil, "", fmt.Sprintf("no match of --metric %q in the output", m.re)
	}
	text := strings.TrimSpace(strings.ReplaceAll(m.group, ",", ""))
	f, err := strconv.ParseFloat(text, 64)
	switch {
	case err != nil || f < 0 || f != f || f > 1e300:
		return nil, m.line, fmt.Sprintf("--metric matched %q in %q, not a number of 0 or more", text, m.line)
	case f == 0:
		return nil, m.line, fmt.Sprintf("--metric matched 0 in %q: a run without work has no throughput to scale", m.line)
	}
	return &f, m.line, ""
}
