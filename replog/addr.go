package replog

import (
	"fmt"
	"net"
	"strconv"
)

// PortOffset derives a master's Raft port from its HTTP port: the Raft
// transport listens on HTTP port + 1000 (5050 → 6050), on the same host,
// so `--masters` (the HTTP addresses) is all the configuration a group
// needs.
const PortOffset = 1000

// RaftAddr returns the Raft address of the master serving HTTP at httpAddr
// (host:port).
func RaftAddr(httpAddr string) (string, error) { return shiftPort(httpAddr, PortOffset) }

// HTTPAddr returns the HTTP address of the master whose Raft address is
// raftAddr (for redirects to the leader).
func HTTPAddr(raftAddr string) (string, error) { return shiftPort(raftAddr, -PortOffset) }

func shiftPort(addr string, by int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("replog: address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return "", fmt.Errorf("replog: address %q: bad port %q", addr, port)
	}
	p += by
	if p <= 0 || p > 65535 {
		return "", fmt.Errorf("replog: address %q: port %d is out of range after shifting by %d", addr, p, by)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}
