package capture

// NamedShare is the share of the captured wait time spent on locks with a
// name, from 0 to 1; 0 when nothing was waited for.
func (c *Capture) NamedShare() float64 {
	var named, total uint64
	for _, r := range c.Records {
		total += r.TotalNS
		if r.Name != "" {
			named += r.TotalNS
		}
	}
	if total == 0 {
		return 0
	}
	return float64(named) / float64(total)
}
