package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stopSignals are the signals that end a capture early. SIGHUP counts: a closed terminal or a
// `kill -HUP` must still get the outputs written.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// notifyStopSignals starts catching stopSignals; call it before anything that takes time, so a
// signal during the start is not fatal.
func notifyStopSignals() (chan os.Signal, func()) {
	signals := make(chan os.Signal, len(stopSignals))
	signal.Notify(signals, stopSignals...)
	return signals, func() { signal.Stop(signals) }
}

// workload is the command klockstat runs and captures.
type workload struct {
	cmd  *exec.Cmd
	done chan error // cmd.Wait's result, once
	// signalled: the command has had the first signal; the next one kills it.
	signalled bool
}

// startWorkload starts argv with klockstat's stdio, inv's, and klockstat's environment with env
// added. The command dies with klockstat (SIGKILL on the parent's death), so a killed klockstat
// leaves no orphan running. It has ended when it exits, not when a process it left behind closes
// its output: that is let go a second later.
func startWorkload(argv []string, inv invocation, env ...string) (*workload, error) {
	return startWorkloadWith(argv, inv, &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}, env...)
}

// startWorkloadWith is startWorkload with the process attributes attr.
func startWorkloadWith(argv []string, inv invocation, attr *syscall.SysProcAttr, env ...string) (*workload, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inv.stdin, inv.stdout, inv.stderr
	cmd.SysProcAttr = attr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	w := &workload{cmd: cmd, done: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil // it exited with success; a process it left behind held its output open
		}
		w.done <- err
	}()
	return w, nil
}

// signal passes sig on to the command: the first time as it is, the second time as SIGKILL. It
// reports whether the command was killed.
func (w *workload) signal(sig os.Signal) (killed bool) {
	if w.signalled {
		w.cmd.Process.Kill()
		return true
	}
	w.signalled = true
	// Ctrl-C on a terminal reaches the whole foreground process group, the command with
	// klockstat: passing klockstat's copy on would make it two.
	if sig != os.Interrupt || !terminalSentToUs() {
		w.cmd.Process.Signal(sig)
	}
	return false
}

// wait waits for the command to exit, saying so on stderr, and keeps answering signals: the first
// is passed on, the second kills the command. It returns the shell-style exit status: the
// command's, or 128+signal when a second signal ended it.
func (w *workload) wait(signals <-chan os.Signal, stderr io.Writer) int {
	fmt.Fprintf(stderr, "klockstat: capture ended; waiting for %s (pid %d) to exit: a signal is passed on to it, a second one kills it\n",
		w.cmd.Args[0], w.cmd.Process.Pid)
	for {
		select {
		case err := <-w.done:
			return *commandStatus(err)
		case sig := <-signals:
			if w.signal(sig) {
				<-w.done
				return 128 + int(sig.(syscall.Signal))
			}
		}
	}
}

// terminalSentToUs reports whether klockstat is in the foreground process group of its terminal,
// where a Ctrl-C reaches it and the command, which shares its group, alike.
func terminalSentToUs() bool {
	for _, fd := range []int{0, 1, 2} {
		if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return pgrp == unix.Getpgrp()
		}
	}
	return false
}

// commandStatus turns cmd.Wait's result into a shell-style exit status.
func commandStatus(err error) *int {
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		} else {
			status = ee.ExitCode()
		}
	} else if err != nil {
		status = 1
	}
	return &status
}
