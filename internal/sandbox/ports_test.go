package sandbox

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeLoopbackAddrsAreBelowTheEphemeralRange(t *testing.T) {
	addrs, err := FreeLoopbackAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	low := ephemeralLow()
	for _, a := range addrs {
		if seen[a] {
			t.Errorf("FreeLoopbackAddrs(3) = %v: expected distinct addresses, found %s twice", addrs, a)
		}
		seen[a] = true
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if low-1-lowestPort >= 1000 && (p < lowestPort || p >= low) {
			t.Errorf("port %d: expected it in %d-%d, below the ephemeral range", p, lowestPort, low-1)
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("listening on %s: %v", a, err)
			continue
		}
		l.Close()
	}
}
