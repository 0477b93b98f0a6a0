package sandbox

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports handed to servers started by the sandbox and its tests are taken below the
// kernel's ephemeral range. A port from the ephemeral range (what listening on port 0
// gives) is free only until the next outgoing connection: the kernel hands the same
// range to every client socket, and a test opening hundreds of connections to the API
// server took the dashboard's port in the second between picking and listening.
const (
	// lowestPort is the lowest port handed out.
	lowestPort = 10000
	// ephemeralRangeFile holds the kernel's ephemeral range ("32768\t60999").
	ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
	// defaultEphemeralLow is Linux's default lowest ephemeral port.
	defaultEphemeralLow = 32768
)

// FreeLoopbackAddrs returns n distinct 127.0.0.1:PORT addresses that were free a
// moment ago, with ports below the kernel's ephemeral range so no outgoing connection
// takes one before its server listens. Where that range leaves no room below it, the
// ports come from port 0.
func FreeLoopbackAddrs(n int) ([]string, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(ports))
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs, nil
}

// FreeLoopbackAddr is FreeLoopbackAddrs for one address.
func FreeLoopbackAddr() (string, error) {
	addrs, err := FreeLoopbackAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// freePorts returns n distinct ports of 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	high := ephemeralLow() - 1
	if high-lowestPort < 1000 {
		return anyPorts(n)
	}
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	span := high - lowestPort + 1
	start := rand.IntN(span)
	for i := 0; i < span && len(ports) < n; i++ {
		p := lowestPort + (start+i)%span
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken
		}
		lns = append(lns, l)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("finding %d free ports in %d-%d: expected them, found %d", n, lowestPort, high, len(ports))
	}
	return ports, nil
}

// anyPorts returns n ports the kernel gives for port 0.
func anyPorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralLow returns the lowest port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile(ephemeralRangeFile)
	if err != nil {
		return defaultEphemeralLow
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return defaultEphemeralLow
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 0 {
		return defaultEphemeralLow
	}
	return low
}
