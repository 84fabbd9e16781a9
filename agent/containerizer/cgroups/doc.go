// Package cgroups confines the `mesos` containerizer's containers with Linux
// control groups: it owns the isolators registered under Mesos's names
// `cgroups/cpu`, `cgroups/mem` and `cgroups/all`, the per-container cgroups
// under a mezzo root (`<hierarchy>/<controller>/<root>/<container>` on
// cgroups v1, `<hierarchy>/<root>/<container>` on v2), killing every
// process of a container (daemonized grandchildren included), OOM detection
// reported as a memory Limitation, and the ResourceStatistics the agent's
// /monitor/statistics endpoint and GET_CONTAINERS call report.
//
// Callers: the agent's wiring imports this package for its init-time
// registration (containerizer.RegisterIsolator) and may call Configure with
// the --cgroups_* flags first; the mesos containerizer drives the isolators
// through the containerizer.Isolator interface and the optional Limiter and
// Usager interfaces declared here.
//
// cgroups v1 and v2 are both handled through github.com/containerd/cgroups/v3;
// the eventfd (v1) and inotify (v2) OOM notifications use only the standard
// library, so the package builds with CGO_ENABLED=0.
package cgroups
