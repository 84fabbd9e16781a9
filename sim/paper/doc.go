// Package paper reproduces the Mesos paper's experiments (NSDI 2011 §6,
// TR §6) on mezzo: its frameworks (frameworks/batch, gang, elastic and
// run) on emulated agents (package sim) against real `mezzo master`
// processes. cmd/mezzo wires it as `mezzo bench paper <name>`; `make
// paper` runs them all and tools/paperplot draws docs/paper/.
//
// Each experiment takes an Env (how to start a master: cmd starts a
// `mezzo master` process; tests use sim/internal/mastertest) and a config
// whose zero fields take the paper's shape, and returns a result that
// marshals to the JSON the plots read:
//
//   - Locality (Fig. 8, §6.3): 16 batch frameworks scanning files spread
//     over 93 agents, on static partitions or sharing the cluster with
//     delay scheduling of 0, 1 and 5 s: locality and job time.
//   - Sharing (Table 4, Figs. 5–6, §6.1): the four framework kinds on one
//     cluster against each on a static quarter: per kind, the sum of job
//     times (for the web service, the demand met) and the cpus each used
//     over time, in the master's own account (/master/state-summary).
//   - Overhead (Fig. 10, §6.5): 200 frameworks keep 1,000 to 50,000
//     agents busy with 30 ± 10 s tasks; a probe framework subscribes,
//     takes an offer and waits for its task to run, many times.
//   - The failover plot (§6.6) comes from `mezzo bench failover`
//     (cmd/mezzo), run for each cluster size; FailoverPoint is its row.
//
// Workloads come from seeded generators (rng): the same seed gives the
// same jobs, blocks, arrival times and task durations on every run, so
// runs differ only by timing. What the emulation changes from the paper
// (task lengths compressed, remote reads modelled as slower tasks, two
// cores for everything) is stated where it happens and in docs/paper.md.
package paper
