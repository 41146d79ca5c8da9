package main

import (
	"testing"
)

// /proc/stat's first line as Linux writes it: idle and iowait are not
// busy; guest time, already in user, is not counted twice.
func TestParseCPUTimes(t *testing.T) {
	got, err := parseCPUTimes("cpu  100 5 20 800 50 1 2 3 40 0\ncpu0 50 2 10 400 25 0 1 1 20 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := [2]uint64{100 + 5 + 20 + 1 + 2 + 3, 100 + 5 + 20 + 800 + 50 + 1 + 2 + 3}; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if s := busyShare([2]uint64{100, 1000}, [2]uint64{150, 1100}); s != 0.5 {
		t.Errorf("busy share %v, want 0.5", s)
	}
	if _, err := parseCPUTimes("intr 1 2 3\n"); err == nil {
		t.Error("a first line that is not the cpu line was read")
	}
}
