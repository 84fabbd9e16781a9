//go:build tools

// Package mesosgo pins unmodified Mesos v1 client programs from mesos-go
// v0.0.11 (msh, example-scheduler, example-executor). The end-to-end
// compatibility tests build them from this module and run them against a
// real mezzo cluster. It is a separate module so mezzo itself never depends
// on mesos-go.
//
// prometheus/client_golang is pinned to v0.9.4 because example-scheduler uses
// prometheus.Handler, removed in v1.
package mesosgo

import (
	_ "github.com/mesos/mesos-go/api/v1/cmd/example-executor"
	_ "github.com/mesos/mesos-go/api/v1/cmd/example-scheduler"
	_ "github.com/mesos/mesos-go/api/v1/cmd/msh"
)
