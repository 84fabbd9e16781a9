// Package elastic is an elastic web service (the paper's web farm, TR
// §5.4 and §6.5), behind `mezzo elastic`: replicas of an HTTP server
// behind a load balancer, scaled with the load, optionally on revocable
// resources.
//
// Pieces:
//
//   - Framework (framework.go, core.go): the scheduler. Every Interval it
//     reads the load (Config.Load), wants ceil(load/Target) replicas
//     within [Min, Max], starts one per offer and at most one per agent,
//     and kills the surplus once the load has stayed low for
//     ScaleDownAfter. It suppresses offers while it has what it wants.
//   - Balancer: a reverse proxy spreading requests round-robin over the
//     running replicas (Framework.Endpoints) and metering their arrival
//     (Meter): its Load is what the framework scales by, as the paper's
//     framework read haproxy's statistics.
//   - Generate: an open-loop HTTP load generator following a Profile
//     ("10-300:60s,300:30s,300-10:60s"), the paper's httperf.
//   - ReplicaHandler: what `mezzo elastic replica` serves: each request
//     costs some CPU and answers the replica's name.
//
// Using it: New(Config) with the masters, the replica command (PORT is
// set to the replica's port), the resources with "ports:1", and Load (a
// Balancer's, or a model of offered load on emulated agents); serve the
// Balancer; Run(ctx) until Stop, which tears the framework down.
//
// Revocable resources: with Revocable, the framework subscribes with
// REVOCABLE_RESOURCES; the first Min replicas run on regular resources,
// later ones take revocable cpus (and mem, if offered revocable) first.
// A replica killed by revocation is counted (Result.Revoked) and
// replaced at the next tick. Which revocable resources the master offers
// depends on the agents' estimators (see docs/oversubscription.md).
package elastic
