package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A sweep's run ends whole: its command runs in a process group of its own, and at the window's
// end, a signal, or the command's own exit with processes of its group still running, the whole
// group gets SIGTERM, then SIGKILL after groupGrace. klockstat is their subreaper meanwhile, so a
// process whose parent died is reaped here rather than left a zombie of an init that may not
// reap (a container's).

// groupGrace is how long a run's process group has between SIGTERM and SIGKILL.
const groupGrace = 5 * time.Second

// groupPoll is how often an ending group is looked at.
const groupPoll = 20 * time.Millisecond

// becomeSubreaper makes klockstat the reaper of the orphans of its commands' process groups.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming the subreaper of the sweep's commands (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4): %w", err)
	}
	return nil
}

// startGroupWorkload starts argv as startWorkload does, in a process group of its own whose id is
// its pid.
func startGroupWorkload(argv []string, inv invocation, env ...string) (*workload, error) {
	return startWorkloadWith(argv, inv, &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}, env...)
}

// groupAlive reports whether a process of group pgid is left; it reaps those that are klockstat's
// zombies first. Call it once the group's leader has been waited for: reaping any member of the
// group could take the leader from cmd.Wait.
func groupAlive(pgid int) bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-pgid, &ws, unix.WNOHANG, nil)
		if err != nil || pid <= 0 {
			break
		}
	}
	return unix.Kill(-pgid, 0) == nil
}

// groupEnding is how a run's process group was ended.
type groupEnding struct {
	signals []string // sent to the group, in order
	exited  bool     // the command had exited by itself before the first
	left    bool     // a process of the group outlived even SIGKILL's wait
}

// String is the run's Stop: "" when nothing was sent.
func (g groupEnding) String() string {
	if len(g.signals) == 0 {
		return ""
	}
	var b strings.Builder
	if g.exited {
		b.WriteString("the command had exited by itself; processes it left in its group got ")
	} else {
		b.WriteString("the command's process group got ")
	}
	b.WriteString(g.signals[0])
	if len(g.signals) > 1 {
		fmt.Fprintf(&b, ", then %s after the %v grace", g.signals[1], groupGrace)
	}
	if g.left {
		b.WriteString("; a process of it was still there after SIGKILL (in uninterruptible sleep?)")
	}
	return b.String()
}

// endGroup ends what is left of process group pgid once its leader has exited: SIGTERM, and
// SIGKILL if it is still there groupGrace later or a signal comes, which it returns; exited says
// the leader exited by itself. It returns at once when nothing is left.
func endGroup(pgid int, exited bool, signals <-chan os.Signal) (groupEnding, os.Signal) {
	g := groupEnding{exited: exited}
	if !groupAlive(pgid) {
		return g, nil
	}
	g.signals = append(g.signals, "SIGTERM")
	unix.Kill(-pgid, unix.SIGTERM)
	gone, sig := waitGroup(pgid, groupGrace, signals)
	if gone {
		return g, nil
	}
	g.signals = append(g.signals, "SIGKILL")
	unix.Kill(-pgid, unix.SIGKILL)
	gone, _ = waitGroup(pgid, groupGrace, nil)
	g.left = !gone
	return g, sig
}

// waitGroup waits up to d for group pgid to be gone, cut short by a signal, which it returns; gone
// says whether the group is.
func waitGroup(pgid int, d time.Duration, signals <-chan os.Signal) (gone bool, sig os.Signal) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for groupAlive(pgid) {
		select {
		case <-deadline.C:
			return false, nil
		case sig := <-signals:
			return false, sig
		case <-tick.C:
		}
	}
	return true, nil
}

// signalGroup sends sig to the process group of w, the leader still running; ESRCH (gone since) is
// no error.
func (w *workload) signalGroup(sig syscall.Signal) {
	if err := unix.Kill(-w.cmd.Process.Pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		w.cmd.Process.Signal(sig)
	}
}
