package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/recordio"
	"mezzo/master"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// idleAllocator makes no offers of its own: tests create offers with
// Master.AllocatorOffer so that they are deterministic.
type idleAllocator struct{}

func (idleAllocator) Start() {}
func (idleAllocator) Stop()  {}
func (idleAllocator) AddFramework(string, *mesos.FrameworkInfo, map[string]resources.Resources, bool, allocator.FrameworkOptions) {
}
func (idleAllocator) RemoveFramework(string)                                                   {}
func (idleAllocator) ActivateFramework(string)                                                 {}
func (idleAllocator) DeactivateFramework(string)                                               {}
func (idleAllocator) UpdateFramework(string, *mesos.FrameworkInfo, allocator.FrameworkOptions) {}
func (idleAllocator) AddAgent(string, *mesos.AgentInfo, resources.Resources, map[string]resources.Resources) {
}
func (idleAllocator) RemoveAgent(string)                                                        {}
func (idleAllocator) UpdateAgent(string, *mesos.AgentInfo, resources.Resources)                 {}
func (idleAllocator) UpdateOversubscribed(string, resources.Resources)                          {}
func (idleAllocator) ActivateAgent(string)                                                      {}
func (idleAllocator) DeactivateAgent(string)                                                    {}
func (idleAllocator) RecoverResources(string, string, resources.Resources, *mesos.Filters)      {}
func (idleAllocator) UpdateAllocation(string, string, resources.Resources, resources.Resources) {}
func (idleAllocator) SuppressOffers(string, []string)                                           {}
func (idleAllocator) ReviveOffers(string, []string)                                             {}
func (idleAllocator) RequestResources(string, []allocator.Request)                              {}
func (idleAllocator) UpdateWeights(map[string]float64)                                          {}
func (idleAllocator) UpdateQuota(string, allocator.Quota)                                       {}
func (idleAllocator) Allocate()                                                                 {}
func (idleAllocator) Pause()                                                                    {}
func (idleAllocator) Resume()                                                                   {}

// cluster is a master behind a real HTTP server speaking HTTP/1.1 and h2c.
type cluster struct {
	m     *master.Master
	srv   *httptest.Server
	conns atomic.Int32 // TCP connections accepted
	h1    *http.Client
	h2c   *http.Client
	quiet *slog.Logger
}

func newCluster(t *testing.T, opts Options) *cluster {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := master.New(master.Config{ID: "M", Hostname: "m.test", IP: "127.0.0.1", Port: 5050, Version: "1.12.0-test",
		Allocator: idleAllocator{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	c := &cluster{m: m, quiet: quiet}
	c.srv = httptest.NewUnstartedServer(New(m, opts))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	c.srv.Config.Protocols = &p
	c.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.srv.Start()
	c.h1 = c.srv.Client()
	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	c.h2c = &http.Client{Transport: &http.Transport{Protocols: &h2}}
	t.Cleanup(func() {
		c.h2c.CloseIdleConnections()
		c.srv.CloseClientConnections()
		m.Stop()
		c.srv.Close()
	})
	return c
}

// httpAgent is a recording fake agent speaking the agent protocol over
// HTTP: it keeps every event the master sends and answers PINGs.
type httpAgent struct {
	t      *testing.T
	c      *cluster
	client *http.Client
	id     string
	events chan *protocol.AgentEvent
	cancel context.CancelFunc
}

func (c *cluster) startAgent(t *testing.T, client *http.Client, sub *protocol.AgentCall_Subscribe) *httpAgent {
	t.Helper()
	body, _ := proto.Marshal(&protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: sub})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.srv.URL+"/internal/v1/agent", bytes.NewReader(body))
	req.Header.Set("Content-Type", string(codec.Protobuf))
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("agent subscribe: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("agent subscribe: %d %s", resp.StatusCode, b)
	}
	a := &httpAgent{t: t, c: c, client: client, events: make(chan *protocol.AgentEvent, 1024), cancel: cancel}
	t.Cleanup(cancel)
	first := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		defer close(a.events)
		r := recordio.NewReader(resp.Body, 0)
		for {
			rec, err := r.Next()
			if err != nil {
				return
			}
			ev := &protocol.AgentEvent{}
			if proto.Unmarshal(rec, ev) != nil {
				return
			}
			if ev.GetType() == protocol.AgentEvent_SUBSCRIBED {
				a.id = ev.GetSubscribed().GetAgentId().GetValue()
				close(first)
			}
			if ev.GetType() == protocol.AgentEvent_PING {
				go a.call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum(),
					Pong: &protocol.AgentCall_Pong{Sequence: ev.GetPing().Sequence}})
			}
			a.events <- ev
		}
	}()
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("agent: no SUBSCRIBED")
	}
	return a
}

func testAgentSub(host string) *protocol.AgentCall_Subscribe {
	return &protocol.AgentCall_Subscribe{
		AgentInfo: &mesos.AgentInfo{Hostname: proto.String(host), Port: proto.Int32(5051),
			Resources: resources.MustParse("cpus:4;mem:1024").Proto()},
		Endpoint: proto.String("127.0.0.1:5051"),
		Version:  protocol.Version_VERSION_1.Enum(),
	}
}

// call posts an agent call and returns the status code.
func (a *httpAgent) call(c *protocol.AgentCall) int {
	c.AgentId = &mesos.AgentID{Value: proto.String(a.id)}
	body, _ := proto.Marshal(c)
	req, _ := http.NewRequest(http.MethodPost, a.c.srv.URL+"/internal/v1/agent", bytes.NewReader(body))
	req.Header.Set("Content-Type", string(codec.Protobuf))
	resp, err := a.client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// next returns the next event of the given type, skipping others.
func (a *httpAgent) next(typ protocol.AgentEvent_Type) *protocol.AgentEvent {
	a.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-a.events:
			if !ok {
				a.t.Fatalf("agent stream ended waiting for %v", typ)
			}
			if ev.GetType() == typ {
				return ev
			}
		case <-timeout:
			a.t.Fatalf("agent: timed out waiting for %v", typ)
		}
	}
}

func (idleAllocator) UpdateUnavailability(string, *mesos.Unavailability) {}
func (idleAllocator) UpdateInverseOffer(string, string, *mesos.Filters)  {}
