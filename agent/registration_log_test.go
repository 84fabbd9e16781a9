package agent

import (
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestRegistrationAttemptsAreQuietAtFirst: an agent whose master is not
// up yet (at start every master is: it has not elected itself) logs its
// failed attempts at INFO; still unregistered after quietRegistration it
// warns. (A healthy single master with agents used to log a WARN per
// agent at start.)
func TestRegistrationAttemptsAreQuietAtFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close() // nothing listens: every attempt is refused
	var logs syncBuffer
	ta := startTestAgent(t, newFakeMaster(t), func(c *Config) {
		c.Masters = []string{refused}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	eventually(t, "a failed attempt logged", func() bool {
		return strings.Contains(logs.String(), "no registration with the master yet")
	})
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a failed first attempt warned:\n%s", logs.String())
	}
	// Past the quiet period the next failed attempt is a warning. The
	// clock is advanced until one comes (the retry timer may be armed
	// after any one advance).
	eventually(t, "the warning", func() bool {
		if strings.Contains(logs.String(), `level=WARN msg="cannot register with the master"`) {
			return true
		}
		ta.clock.Advance(quietRegistration)
		return false
	})
}
