package agent

import (
	"context"
	"errors"
	"slices"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/oversub"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"
)

// Oversubscription on the agent's loop (docs/oversubscription.md). The
// estimator and the QoS controller (agent/oversub) measure cgroups, so they
// run off the loop through oversubSink; the loop keeps the state below,
// decides when to ask and carries out the answers.
//
// Estimate loop (Mesos's Slave::forwardOversubscribed): when the loop
// starts (after recovery, so a restarted agent recomputes its estimate) and
// then --oversubscribed_resources_interval after each answer, the loop
// takes a snapshot of its live containers with their allocations and hands
// it to the estimator. The answer comes back to the loop, which adds the
// throttle-able revocable resources containers hold (oversub.Forwarder) and
// sends the total in UPDATE_RESOURCES when it differs from the last one
// sent, or first after a (re-)registration. A total the agent could not
// send (not registered) is sent again at the next answer.
//
// QoS loop (Mesos's Slave::qosCorrections): every qosSamplePeriod, while a
// revocable container lives, the loop hands a snapshot to the controller;
// the corrections come back to the loop, which destroys each named
// container whole (its tasks end TASK_LOST, or TASK_GONE for
// PARTITION_AWARE frameworks, REASON_CONTAINER_PREEMPTED, a message naming
// the controller). After a round that killed anything the next sample waits
// at least --qos_correction_interval_min, so rounds of corrections are
// never closer than that. The loop checks each named container itself and
// never kills one without revocable resources, whatever the controller says.
//
// A "noop" estimator or controller runs no loop at all (Mesos's noop
// estimator never answers): an agent without oversubscription sends no
// UPDATE_RESOURCES and measures nothing.

// qosSamplePeriod is how often the QoS controller looks at the containers.
// A correction follows the start of interference by at most two periods
// (the interference controller needs two samples for a rate) plus the time
// a measurement takes, well within the bound of
// --qos_correction_interval_min + 1 s; a shorter period would cost a cgroup
// read per container four times a second for no faster reaction that
// matters.
const qosSamplePeriod = 250 * time.Millisecond

// oversubTimeout bounds one round of measuring and estimating or correcting.
const oversubTimeout = 30 * time.Second

// oversubSink runs the estimator and the QoS controller (sinks.go has the
// other sinks). Each call hands over a snapshot taken on the loop; done
// runs on the loop with the answer. The loop never has two estimates, or
// two rounds of corrections, in flight, so the estimator and the controller
// are each called by one goroutine at a time, as agent/oversub requires.
type oversubSink interface {
	estimate(snap oversub.Snapshot, now time.Time, done func(resources.Resources, error))
	correct(snap oversub.Snapshot, now time.Time, done func([]oversub.Correction, error))
}

// oversubState is the loop-owned oversubscription state (core.ovs).
type oversubState struct {
	// estimating and correcting are on while the loop runs the estimator
	// or the controller; estimates and qos while their loops run at all.
	estimating, correcting bool
	estimates, qos         bool
	estTimer, qosTimer     *loopTimer
	// fwd applies Mesos's sending rule; estimate is the estimator's latest
	// answer and total what it amounts to with the throttle-able resources
	// containers hold (what the master was, or is to be, told).
	fwd          oversub.Forwarder
	estimate     resources.Resources
	total        resources.Resources
	haveEstimate bool
	// lastRound is when the last round of corrections killed anything.
	lastRound time.Time

	// Counters (backend.go's metrics).
	updatesSent        uint64 // UPDATE_RESOURCES sent
	estimateErrors     uint64 // estimator rounds that failed
	qosErrors          uint64 // controller rounds that failed
	qosPreempted       uint64 // containers killed by QoS corrections
	lentEvicted        uint64 // tenants evicted for a lent reservation's owner
	correctionsIgnored uint64 // named a container already ending or gone
	correctionsRefused uint64 // named a container without revocable resources
}

// startOversubscription starts the estimate and QoS loops (loop, once the
// agent has recovered).
func (a *core) startOversubscription() {
	if a.ovsSink == nil {
		return
	}
	c := a.cfg.Oversubscription
	if c.ResourceEstimator != "" && c.ResourceEstimator != "noop" {
		a.ovs.estimates = true
		a.runEstimate()
	}
	if c.QoSController != "" && c.QoSController != "noop" {
		a.ovs.qos = true
		a.armQoS(qosSamplePeriod)
	}
}

// runEstimate asks the estimator for a new estimate.
func (a *core) runEstimate() {
	if a.ovs.estimating {
		return
	}
	a.ovs.estimating = true
	a.ovsSink.estimate(a.usageSnapshot(), a.clock.Now(), a.estimated)
}

// estimated takes the estimator's answer (loop) and arms the next round.
func (a *core) estimated(est resources.Resources, err error) {
	a.ovs.estimating = false
	a.ovs.estTimer = a.after(a.cfg.Oversubscription.OversubscribedResourcesInterval, a.runEstimate)
	if err != nil {
		// No estimate this round: the last one stands.
		a.ovs.estimateErrors++
		a.log.Warn("resource estimator failed; keeping the last estimate", "estimator", a.cfg.Oversubscription.ResourceEstimator, "err", err)
		return
	}
	a.ovs.estimate, a.ovs.haveEstimate = est, true
	a.forwardEstimate()
}

// forwardEstimate computes the total of the latest estimate and sends it
// if Mesos's rule says so.
func (a *core) forwardEstimate() {
	// A revocable container being killed holds nothing any more as far as
	// the master should know: its resources come back with its tasks' end,
	// and a total still counting them would have them offered again at
	// once (the bench's tenants were evicted and relaunched in a loop).
	held := a.usageSnapshot().Containers
	held = slices.DeleteFunc(held, func(c oversub.ContainerUsage) bool {
		e := a.executorByContainer(c.ContainerID)
		return e != nil && e.phase == phaseTerminating && c.Revocable()
	})
	total, send := a.ovs.fwd.Next(a.ovs.estimate, held)
	a.ovs.total = total
	if !send {
		return
	}
	call := &protocol.AgentCall{
		Type:            protocol.AgentCall_UPDATE_RESOURCES.Enum(),
		UpdateResources: &protocol.AgentCall_UpdateResources{Oversubscribed: total.Proto()},
	}
	if !a.sendCall(call) {
		a.ovs.fwd.Reset() // not registered: the next answer, or the registration, sends it
		return
	}
	a.ovs.updatesSent++
	a.log.Debug("oversubscribed resources sent to the master", "total", total.String())
}

// oversubRegistered runs when the agent (re-)registers: the new master (or
// the same one after a break) hears the latest total at once, as Mesos's
// agent sends its latest estimate from Slave::registered.
func (a *core) oversubRegistered() {
	a.ovs.fwd.Reset()
	if a.ovs.haveEstimate {
		a.forwardEstimate()
	}
}

// armQoS schedules the next look of the QoS controller.
func (a *core) armQoS(d time.Duration) {
	a.ovs.qosTimer = a.after(d, a.runQoS)
}

// runQoS hands a snapshot to the controller unless no revocable container
// lives (nothing could be corrected).
func (a *core) runQoS() {
	if a.ovs.correcting {
		return
	}
	if !a.revocableLive() {
		a.armQoS(qosSamplePeriod)
		return
	}
	a.ovs.correcting = true
	a.ovsSink.correct(a.usageSnapshot(), a.clock.Now(), a.corrected)
}

// corrected carries out the controller's corrections (loop) and arms the
// next look: one sample period away, or after a round that killed
// anything, --qos_correction_interval_min (if longer).
func (a *core) corrected(cs []oversub.Correction, err error) {
	a.ovs.correcting = false
	next := qosSamplePeriod
	if err != nil {
		a.ovs.qosErrors++
		a.log.Warn("QoS controller failed; no corrections this round", "controller", a.cfg.Oversubscription.QoSController, "err", err)
	}
	killed := 0
	for _, c := range cs {
		if a.applyCorrection(c) {
			killed++
		}
	}
	if killed > 0 {
		a.ovs.lastRound = a.clock.Now()
		next = max(next, a.cfg.Oversubscription.QoSCorrectionIntervalMin)
		if a.ovs.haveEstimate {
			// Tell the master now, before the tasks' ends free what the
			// killed containers held, that it is not to be offered again.
			a.forwardEstimate()
		}
	}
	a.armQoS(next)
}

// applyCorrection kills the container a correction names, if it is a live
// revocable container; it reports whether it did.
func (a *core) applyCorrection(c oversub.Correction) bool {
	e := a.executorByContainer(c.ContainerID)
	if c.Type != oversub.Kill || e == nil || e.phase == phaseTerminating || e.phase == phaseTerminated {
		// Ended, or being killed already (e.g. by the previous round).
		a.ovs.correctionsIgnored++
		return false
	}
	if !e.revocable() {
		// The controllers never name one; the loop makes sure.
		a.ovs.correctionsRefused++
		a.log.Error("QoS correction refused: the container holds no revocable resources",
			"controller", c.Controller, "framework", e.fw.id, "executor", e.id, "container", e.containerID)
		return false
	}
	a.log.Warn("QoS correction: killing a revocable container", "controller", c.Controller,
		"framework", e.fw.id, "executor", e.id, "container", e.containerID, "why", c.Message)
	a.ovs.qosPreempted++
	a.preempt(e, "Container preempted by QoS correction: "+c.Message)
	return true
}

// preempt destroys a revocable container at once (no SHUTDOWN, no grace,
// as Mesos's agent carries out a QoS correction): every task it holds
// ends TASK_LOST, or TASK_GONE for partition-aware frameworks, with
// REASON_CONTAINER_PREEMPTED and msg.
func (a *core) preempt(e *executor, msg string) {
	e.regTimer.Stop()
	e.shutdownTimer.Stop()
	e.pending = &termination{a.goneState(e.fw), mesos.TaskStatus_REASON_CONTAINER_PREEMPTED, msg}
	e.phase = phaseTerminating
	e.queue = nil
	a.stopDirectHealth(e)
	if !e.launching {
		a.destroyContainer(e, 0)
	}
}

// goneState is TASK_GONE for partition-aware frameworks, else TASK_LOST:
// what a task of a preempted container becomes (Mesos's QoS correction).
func (a *core) goneState(fw *framework) mesos.TaskState {
	if fw != nil && fw.hasCapability(mesos.FrameworkInfo_Capability_PARTITION_AWARE) {
		return mesos.TaskState_TASK_GONE
	}
	return mesos.TaskState_TASK_LOST
}

// revocableLive reports whether a live container holds revocable
// resources (four times a second: it reads the protos).
func (a *core) revocableLive() bool {
	for e := range a.liveExecutors() {
		if e.revocable() {
			return true
		}
	}
	return false
}

// executorByContainer finds the live executor running in a container (nil
// if it has terminated or is unknown).
func (a *core) executorByContainer(id string) *executor {
	for e := range a.liveExecutors() {
		if e.containerID == id {
			return e
		}
	}
	return nil
}

// allocation is what the executor and its live tasks were allocated.
func (e *executor) allocation() []*mesos.Resource {
	out := append([]*mesos.Resource(nil), e.info.GetResources()...)
	for _, t := range e.liveTasks() {
		out = append(out, t.t.GetResources()...)
	}
	return out
}

// revocable reports whether the executor or a live task holds a revocable
// resource, which makes the whole container revocable (as in Mesos).
func (e *executor) revocable() bool {
	for _, r := range e.allocation() {
		if r.Revocable != nil {
			return true
		}
	}
	return false
}

// usageSnapshot lists the live containers with their allocations, for the
// estimator and the controller (their Statistics are measured off the loop).
// Containers still starting are listed too: what they hold counts (the
// forwarded total, the fixed estimator), and, unmeasurable yet, the slack
// estimator lends nothing for them and the controllers count a revocable
// one at its allocation.
func (a *core) usageSnapshot() oversub.Snapshot {
	s := oversub.Snapshot{Total: a.total.NonRevocable()}
	for e := range a.liveExecutors() {
		if e.containerID == "" {
			continue
		}
		alloc, err := resources.FromProto(e.allocation())
		if err != nil {
			a.log.Debug("leaving a container out of the usage snapshot", "executor", e.id, "err", err)
			continue
		}
		s.Containers = append(s.Containers, oversub.ContainerUsage{
			ContainerID: e.containerID, FrameworkID: e.fw.id, ExecutorID: e.id, Allocated: alloc,
		})
	}
	return s
}

// oversubRunner calls the estimator and the controller on snapshots the
// loop took. Its fields are used by one goroutine at a time (see
// oversubSink).
type oversubRunner struct {
	est              oversub.ResourceEstimator
	ctl              oversub.QoSController
	estSnap, ctlSnap oversub.Snapshot
}

// newOversubRunner builds the configured estimator and controller, each
// measuring the snapshot it is given with meter.
func newOversubRunner(cfg oversub.Config, meter oversub.Meter) (*oversubRunner, error) {
	r := &oversubRunner{}
	var err error
	r.est, err = oversub.NewEstimator(cfg, oversub.Measure(func(context.Context) (oversub.Snapshot, error) { return r.estSnap, nil }, meter))
	if err != nil {
		return nil, err
	}
	r.ctl, err = oversub.NewController(cfg, oversub.Measure(func(context.Context) (oversub.Snapshot, error) { return r.ctlSnap, nil }, meter))
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (r *oversubRunner) estimate(ctx context.Context, snap oversub.Snapshot, now time.Time) (resources.Resources, error) {
	r.estSnap = snap
	return r.est.Oversubscribable(ctx, now)
}

func (r *oversubRunner) correct(ctx context.Context, snap oversub.Snapshot, now time.Time) ([]oversub.Correction, error) {
	r.ctlSnap = snap
	return r.ctl.Corrections(ctx, now)
}

// liveOversub runs the estimator and the controller on goroutines of their
// own, reporting to the loop through post.
type liveOversub struct {
	a *Agent
	r *oversubRunner
}

var _ oversubSink = liveOversub{}

func (o liveOversub) estimate(snap oversub.Snapshot, now time.Time, done func(resources.Resources, error)) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), oversubTimeout)
		defer cancel()
		est, err := o.r.estimate(ctx, snap, now)
		o.a.post(func() { done(est, err) })
	}()
}

func (o liveOversub) correct(snap oversub.Snapshot, now time.Time, done func([]oversub.Correction, error)) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), oversubTimeout)
		defer cancel()
		cs, err := o.r.correct(ctx, snap, now)
		o.a.post(func() { done(cs, err) })
	}()
}

// noMeter measures nothing: a containerizer that cannot measure leaves every
// container's Statistics nil (the estimators then lend nothing for it and
// the controllers leave it alone).
type noMeter struct{}

func (noMeter) Usage(context.Context, string) (*mesos.ResourceStatistics, error) {
	return nil, errors.New("the containerizer does not measure usage")
}

// meterOf is the containerizer as the estimators' Meter.
func meterOf(cz containerizer.Containerizer) oversub.Meter {
	if ur, ok := cz.(containerizer.UsageReporter); ok {
		return ur
	}
	return noMeter{}
}
