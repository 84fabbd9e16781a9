// Package scheduler is the Go SDK for writing Mesos frameworks against the
// v1 scheduler HTTP API (`POST /api/v1/scheduler`) of mezzo or Apache Mesos.
// Frameworks shipped with mezzo (frameworks/run behind `mezzo run`, the
// simulator's frameworks) and third-party Go frameworks call it.
//
// It owns the client side of the subscription protocol:
//
//  1. New(Config) with the master addresses, the FrameworkInfo and a codec
//     (protobuf by default, or JSON).
//  2. Subscribe(ctx) sends SUBSCRIBE, follows 307 redirects to the leading
//     master, tries the next master on a connection failure or 503, and
//     returns a channel of events once a master answers 200. The first event
//     is SUBSCRIBED.
//  3. The client keeps the Mesos-Stream-Id and the assigned FrameworkID.
//     When the stream breaks, or stays silent for 5 heartbeat intervals
//     (Mesos sends HEARTBEAT every 15 s), it re-subscribes with that
//     FrameworkID after an exponential backoff; the framework sees a new
//     SUBSCRIBED event and should reconcile.
//  4. Call(ctx, call) and the helpers (Launch, Accept, Decline, Acknowledge,
//     Kill, Reconcile, Revive, Suppress, Teardown, AcceptInverseOffers,
//     DeclineInverseOffers) post calls to the master
//     holding the stream, filling framework_id and the stream id header. A
//     reply other than 200/202 is an *Error with the status and body text.
//  5. The event channel is closed when ctx ends, after an ERROR event (the
//     master aborted the framework or another scheduler took it over), after
//     Teardown, or when the master refuses a re-subscription; Err says why.
//
// The package imports only api/..., resources and internal/... (see
// docs/development.md). Time comes from an injected clock.Clock so tests
// drive heartbeats and backoff without sleeping.
package scheduler
