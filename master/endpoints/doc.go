// Package endpoints is the master's read side over HTTP: the classic JSON
// endpoints (/master/state, /master/state-summary, /master/frameworks,
// /master/slaves, /master/tasks, /master/roles, /master/flags,
// /metrics/snapshot and Prometheus text at /metrics), the v1 operator API
// (POST /api/v1: GET_* calls, SUBSCRIBE, TEARDOWN, the weight and quota
// writes, and the operations on an agent's resources: RESERVE_RESOURCES,
// UNRESERVE_RESOURCES, CREATE_VOLUMES, DESTROY_VOLUMES, GROW_VOLUME,
// SHRINK_VOLUME) and the classic POST forms /master/teardown,
// /master/reserve, /master/unreserve, /master/create-volumes and
// /master/destroy-volumes.
//
// Everything is rendered from the immutable *master.Snapshot the master's
// event loop publishes, so a large /master/state never stalls the loop; the
// writes go through Source's write methods, which take the caller's
// principal and return errors that carry their HTTP status. The master's HTTP router
// calls Register once at start-up; nothing here touches master internals.
//
// Wire shapes follow Mesos (shared/reference/mesos-v1-api.md §3.1, §3.2):
// classic endpoints keep the old names (slave_id, slaves, pid
// "slave(1)@ip:port"), summarize resources as {"cpus":…,"mem":…} objects and
// embed protobuf sub-objects in Mesos's JSON mapping (api/codec).
package endpoints
