// Package oversub holds the agent's oversubscription plug points: the
// ResourceEstimator, which says how much of what regular containers were
// allocated but do not use may be offered again as revocable resources, and
// the QoSController, which says which revocable containers to kill when the
// regular ones suffer. It also holds the eviction arithmetic for lending
// idle reservations (PlanEviction) and the flags of all three (Config).
//
// Nothing here talks to the master, the containerizer or the HTTP layer:
// the agent hands the package a UsageSource and acts on what it returns
// (agent/oversubscription.go and agent/lending.go follow the manual below;
// docs/oversubscription.md).
//
// # Operating manual for the agent
//
//  1. Register the flags: cfg.RegisterFlags(fs) on the agent's FlagSet, then
//     cfg.Validate() after parsing (it fills defaults and names a bad field).
//  2. Build a UsageSource: Measure(list, meter), where list is the agent's
//     own snapshot of its containers and their allocations (taken on its
//     loop) and meter is the containerizer (*containerizer.Mesos satisfies
//     Meter: it is containerizer.UsageReporter).
//  3. est, err := NewEstimator(cfg, usage); ctl, err := NewController(cfg, usage).
//  4. Every cfg.OversubscribedResourcesInterval, off the agent's loop, call
//     est.Oversubscribable(ctx, now), then Forwarder.Next with it and the
//     containers: it adds the throttle-able revocable resources containers already hold
//     (as Mesos's agent does) and says whether the total differs from the
//     last one sent; if so send it in UPDATE_RESOURCES. Forwarder.Reset on
//     (re-)registration.
//  5. In a second goroutine, call ctl.Corrections(ctx, now), carry out each
//     Correction (kill the whole container; TASK_LOST or TASK_GONE with
//     REASON_CONTAINER_PREEMPTED, Mesos v0's REASON_EXECUTOR_PREEMPTED, and
//     Correction.Message), wait
//     cfg.QoSCorrectionIntervalMin, repeat. Corrections naming a container
//     that is already being killed are to be ignored by the agent.
//  6. When a regular task is launched on a reservation that was lent out,
//     call PlanEviction with what runs on the agent; kill the containers it
//     names and start the launch if Eviction.StartNow, else when an evicted
//     container ends and PlanEviction with no Launch reports StartNow.
//
// # Threading
//
// An estimator and a controller are each owned by one goroutine: their
// methods are not safe for concurrent use, and they keep per-container
// history between calls. Neither sleeps nor reads the clock: the caller
// passes now. Both may block on the UsageSource (it measures cgroups), so the
// agent must call them off its event loop. Registries (RegisterEstimator,
// RegisterController) are safe for concurrent use and are filled in init.
package oversub
