// Package mastertest holds test helpers for packages that run a real
// master in-process (its endpoints, the CLI, the web UI's route checks).
package mastertest

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/master"
	"mezzo/resources"
)

// SubscribeAgent has one agent ("a1" at 10.0.0.2:5051, with resources res,
// e.g. "cpus:4;mem:1024") subscribe to the started master m in-process,
// waits until the master admits it, and returns its ID and stream. The
// stream lives, and its events are drained in the background (not looked
// at), until the test ends. The agent may not be in m's snapshot yet.
func SubscribeAgent(t testing.TB, m *master.Master, res string) (string, *master.AgentStream) {
	t.Helper()
	// The stream lives as long as ctx: until the test ends.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := m.SubscribeAgent(ctx, master.Principal{}, &protocol.AgentCall{
		Type: protocol.AgentCall_SUBSCRIBE.Enum(),
		Subscribe: &protocol.AgentCall_Subscribe{
			AgentInfo: &mesos.AgentInfo{Hostname: proto.String("a1"), Port: proto.Int32(5051),
				Resources: resources.MustParse(res).Proto()},
			Endpoint: proto.String("10.0.0.2:5051"),
			Version:  protocol.Version_VERSION_1.Enum(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	deadline := time.After(10 * time.Second)
	for id == "" {
		select {
		case <-st.Ready():
			evs, ended := st.Drain()
			if ended {
				t.Fatal("the master ended the agent's stream")
			}
			for _, ev := range evs {
				if ev.GetType() == protocol.AgentEvent_SUBSCRIBED {
					id = ev.GetSubscribed().GetAgentId().GetValue()
				}
			}
		case <-deadline:
			t.Fatal("the agent was not admitted")
		}
	}
	go func() {
		for {
			select {
			case <-st.Ready():
				if _, ended := st.Drain(); ended {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return id, st
}
