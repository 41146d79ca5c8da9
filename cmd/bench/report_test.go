package main

import (
	"strings"
	"testing"
	"time"
)

// The three ways of passing users are reported side by side, each size a
// row with the list form's time over the set form's.
func TestUsersForms(t *testing.T) {
	rows := []row{
		{N: 1000, PlanListed: 300 * time.Millisecond, PlanList: 330 * time.Millisecond, PlanFile: 280 * time.Millisecond, MemList: 40 << 10},
		{N: 20000, PlanListed: 1700 * time.Millisecond, PlanList: 3600 * time.Millisecond, PlanFile: 800 * time.Millisecond, MemList: 100 << 10},
	}
	out := usersForms(rows)
	for _, want := range []string{
		"| 1000 | 0.30 s | 0.33 s | 0.28 s | 1.10× | 40 MiB |",
		"| 20000 | 1.70 s | 3.60 s | 0.80 s | 2.12× | 100 MiB |",
		"`set(string)` variable | `list(string)` variable | `file(\"users.json\")`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
}
