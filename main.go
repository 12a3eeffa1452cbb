// Command klockstat finds where a Linux kernel waits on contended locks: it
// captures lock:contention_begin/end with eBPF for a fixed window or while a
// command runs, and summarises the waits by lock type, caller and stack.
// The command line is package cli.
package main

import (
	"os"

	"github.com/klockstat/klockstat/cli"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	os.Exit(cli.Main(version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
