package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestRunBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-lock", "futex"}, `unknown lock "futex"`},
		{[]string{"-threads", "0"}, "threads must be at least 1"},
		{[]string{"-duration", "-1s"}, "duration must not be negative"},
		{[]string{"-duration", "soon"}, `invalid value "soon" for flag -duration`},
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"-lock", "pipe", "-lock", "spin,pipe"}, "-lock pipe given twice"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", msg, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-json", "-lock", "pipe,spin", "-lock", "inode", "-threads", "2", "-ops", "20", "-duration", "0", "-dir", t.TempDir()}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "ready pid=") {
		t.Errorf("stderr = %q, want a ready line", stderr.String())
	}
	var got report
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("decoding %q: %v", stdout.String(), err)
	}
	var locks []string
	var ops uint64
	for _, r := range got.Locks {
		locks = append(locks, r.Lock)
		ops += r.Ops
		if r.Ops != 2*20 {
			t.Errorf("%s: ops = %d, want 2 threads x 20", r.Lock, r.Ops)
		}
	}
	if fmt.Sprint(locks) != "[pipe spin inode]" {
		t.Errorf("locks = %v, want them in flag order", locks)
	}
	if got.Total.Ops != ops || got.Total.Threads != 6 || len(got.Total.TIDs) != 6 {
		t.Errorf("total = %+v, want ops %d over 6 threads", got.Total, ops)
	}
	if got.PID <= 0 {
		t.Errorf("pid = %d", got.PID)
	}
}

func TestRunText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-lock", "spin", "-threads", "2", "-ops", "5"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "lock=spin threads=2 ops=10 duration=") ||
		!strings.HasPrefix(lines[1], "lock=total threads=2 ops=10 duration=") {
		t.Errorf("stdout = %q, want a spin line and a total line", stdout.String())
	}
}
