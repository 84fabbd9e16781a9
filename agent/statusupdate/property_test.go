package statusupdate

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"github.com/google/uuid"
	"pgregory.net/rapid"
)

// modelStream is the oracle for one task: what was accepted, in order.
type modelStream struct {
	accepted []*protocol.AgentCall_StatusUpdate // current generation
	acked    int                                // prefix of accepted acknowledged
	terminal bool                               // a terminal update was accepted
}

func (s *modelStream) pending() []*protocol.AgentCall_StatusUpdate { return s.accepted[s.acked:] }

var allStates = []mesos.TaskState{
	mesos.TaskState_TASK_STAGING, mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING,
	mesos.TaskState_TASK_KILLING, mesos.TaskState_TASK_UNREACHABLE, mesos.TaskState_TASK_FINISHED,
	mesos.TaskState_TASK_FAILED, mesos.TaskState_TASK_KILLED, mesos.TaskState_TASK_LOST,
}

// TestPropertyStreams runs random interleavings of updates, duplicates,
// acknowledgements (right and wrong), time passing, pause/resume and agent
// restarts against a model, and checks that every accepted update is
// forwarded, in order, only as the head, and that terminal acks close streams.
func TestPropertyStreams(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		checkpoint := rapid.Bool().Draw(rt, "checkpoint")
		dir := ""
		if checkpoint {
			d, err := os.MkdirTemp(t.TempDir(), "meta")
			if err != nil {
				rt.Fatal(err)
			}
			dir = d
		}
		tasks := []string{"a", "b", "c"}
		model := map[string]*modelStream{}
		for _, task := range tasks {
			model[task] = &modelStream{}
		}
		history := map[string][]uuid.UUID{}      // every accepted uuid, in order
		firstForward := map[string][]uuid.UUID{} // uuids in order of first forward
		forwardedOnce := map[uuid.UUID]bool{}    // forwarded at least once
		var forwarded []*protocol.AgentCall_StatusUpdate
		fwd := func(u *protocol.AgentCall_StatusUpdate) bool {
			forwarded = append(forwarded, u)
			return true
		}
		newManager := func() *Manager { return New(Options{Forward: fwd, MetaDir: dir}) }
		m := newManager()
		now := t0
		paused := false

		checkFlush := func() {
			forwarded = nil
			m.flush(now)
			seen := map[string]bool{}
			for _, u := range forwarded {
				task := u.GetStatus().GetTaskId().GetValue()
				ms := model[task]
				if seen[task] {
					rt.Fatalf("task %s forwarded twice in one flush", task)
				}
				seen[task] = true
				p := ms.pending()
				if len(p) == 0 || uuidOf(p[0]) != uuidOf(u) {
					rt.Fatalf("task %s: forwarded %s which is not the head", task, uuidOf(u))
				}
				if want := ms.accepted[len(ms.accepted)-1].GetStatus().GetState(); u.GetLatestState() != want {
					rt.Fatalf("task %s: latest_state %s, want %s", task, u.GetLatestState(), want)
				}
				if !forwardedOnce[uuidOf(u)] {
					forwardedOnce[uuidOf(u)] = true
					firstForward[task] = append(firstForward[task], uuidOf(u))
				}
			}
			if paused && len(forwarded) > 0 {
				rt.Fatal("forwarded while paused")
			}
		}
		checkPending := func() {
			for _, task := range tasks {
				got := m.Pending("f", task)
				want := model[task].pending()
				if len(got) != len(want) {
					rt.Fatalf("task %s: %d pending, model %d", task, len(got), len(want))
				}
				for i := range want {
					if uuidOf(got[i]) != uuidOf(want[i]) {
						rt.Fatalf("task %s: pending[%d] differs", task, i)
					}
				}
			}
		}

		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			task := rapid.SampledFrom(tasks).Draw(rt, "task")
			ms := model[task]
			switch op := rapid.IntRange(0, 8).Draw(rt, "op"); op {
			case 0, 1, 2: // new update
				state := rapid.SampledFrom(allStates).Draw(rt, "state")
				u := mkUpdate("f", task, state)
				err := m.Update(u, checkpoint)
				if ms.terminal {
					if !errors.Is(err, ErrTerminated) {
						rt.Fatalf("update after terminal: %v", err)
					}
					continue
				}
				if err != nil {
					rt.Fatalf("update: %v", err)
				}
				ms.accepted = append(ms.accepted, u)
				ms.terminal = mesos.IsTerminal(state)
				history[task] = append(history[task], uuidOf(u))
			case 3: // duplicate of an accepted update
				if len(ms.accepted) == 0 {
					continue
				}
				u := ms.accepted[rapid.IntRange(0, len(ms.accepted)-1).Draw(rt, "dup")]
				if err := m.Update(u, checkpoint); err != nil {
					rt.Fatalf("duplicate update: %v", err)
				}
			case 4, 5: // the scheduler acks the head it has received
				p := ms.pending()
				if len(p) == 0 || !forwardedOnce[uuidOf(p[0])] {
					continue
				}
				term, err := m.Acknowledge("f", task, p[0].Status.Uuid)
				if err != nil {
					rt.Fatalf("ack of head: %v", err)
				}
				ms.acked++
				if want := mesos.IsTerminal(p[0].GetStatus().GetState()); term != want {
					rt.Fatalf("ack terminal=%v, want %v", term, want)
				}
				if term {
					model[task] = &modelStream{}
				}
			case 6: // a wrong ack
				var id []byte
				if p := ms.pending(); len(p) > 1 && rapid.Bool().Draw(rt, "non-head") {
					id = p[1].Status.Uuid
				} else {
					r := uuid.New()
					id = r[:]
				}
				if _, err := m.Acknowledge("f", task, id); err == nil {
					rt.Fatal("wrong ack accepted")
				}
			case 7: // time passes
				now = now.Add(time.Duration(rapid.IntRange(0, 700).Draw(rt, "secs")) * time.Second)
				checkFlush()
			case 8: // pause, resume, or (checkpointing) restart
				switch rapid.IntRange(0, 2).Draw(rt, "ctl") {
				case 0:
					m.Pause()
					paused = true
				case 1:
					m.Resume()
					paused = false
				case 2:
					if !checkpoint {
						continue
					}
					m = newManager()
					paused = false
					if err := m.Recover(); err != nil {
						rt.Fatalf("recover: %v", err)
					}
				}
			}
			checkPending()
		}

		// Drain: connected, the scheduler acks every head it receives.
		m.Resume()
		paused = false
		for round := 0; round < 1000; round++ {
			now = now.Add(RetryIntervalMax)
			checkFlush()
			if len(forwarded) == 0 {
				break
			}
			for _, u := range forwarded {
				if _, err := m.Acknowledge("f", u.GetStatus().GetTaskId().GetValue(), u.Status.Uuid); err != nil {
					rt.Fatalf("drain ack: %v", err)
				}
				task := u.GetStatus().GetTaskId().GetValue()
				model[task].acked++
			}
		}
		for _, task := range tasks {
			if n := len(m.Pending("f", task)); n != 0 {
				rt.Fatalf("task %s: %d updates never delivered", task, n)
			}
			if fmt.Sprint(history[task]) != fmt.Sprint(firstForward[task]) {
				rt.Fatalf("task %s: accepted %v but first forwarded %v", task, history[task], firstForward[task])
			}
		}
	})
}
