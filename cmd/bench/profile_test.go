package main

import (
	"testing"
	"time"
)

func TestParseFocus(t *testing.T) {
	for _, c := range []struct {
		out            string
		matched, total time.Duration
	}{
		{"Type: cpu\nActive filters:\n   focus=x\nShowing nodes accounting for 20ms, 3.57% of 560ms total\n", 20 * time.Millisecond, 560 * time.Millisecond},
		{"Showing nodes accounting for 1.20s, 40.00% of 3s total\n", 1200 * time.Millisecond, 3 * time.Second},
		{"Active filters:\n   focus=nomatch\nShowing nodes accounting for 0, 0% of 560ms total\n", 0, 560 * time.Millisecond},
	} {
		m, total, err := parseFocus(c.out)
		if err != nil || m != c.matched || total != c.total {
			t.Errorf("parseFocus(%q) = %s, %s, %v; want %s, %s", c.out, m, total, err, c.matched, c.total)
		}
	}
	if _, _, err := parseFocus("no profile here"); err == nil {
		t.Error("an output without totals gave no error")
	}
}
