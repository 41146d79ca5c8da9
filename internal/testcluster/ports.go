package testcluster

import (
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// freePort is a port on 127.0.0.1 that nothing listens on, chosen at
// random below the kernel's ephemeral range. A port from that range (what
// listening on port 0 gives) may be taken, between this check and the
// server's bind, as the source port of any connection the machine opens,
// and etcd then exits with "address already in use"; below the range only
// another listener can take it.
func freePort() (int, error) {
	const lowest = 10000
	if top := ephemeralLow(); top > lowest+1000 {
		for range 100 {
			p := lowest + mrand.IntN(top-lowest)
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue // in use
			}
			_ = l.Close()
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("listener address %v is not TCP", l.Addr())
	}
	return addr.Port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			return n
		}
	}
	return 32768
}
