package testcluster

import (
	"net"
	"strconv"
	"testing"
)

// The test bed's ports lie below the ephemeral range, where no outgoing
// connection's source port can take one between the check and the bind,
// and each is free when given.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	top := ephemeralLow()
	below := top > 11000 // else no room below it: any free port
	seen := map[int]bool{}
	for range 50 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if below && (p < 10000 || p >= top) {
			t.Fatalf("port %d is not in [10000, %d)", p, top)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		_ = l.Close()
		seen[p] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 ports drawn, only %d distinct: not drawn at random", len(seen))
	}
}
