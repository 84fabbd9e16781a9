package agent

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/httpapi"
	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/stout"
	"mezzo/internal/sysmetrics"
	"mezzo/internal/version"

	"google.golang.org/protobuf/proto"
)

// backend implements httpapi.Backend on top of the agent loop: every call
// runs on the loop and waits for it.
type backend struct{ a *Agent }

var errStopping = httpapi.Errorf(http.StatusServiceUnavailable, "Agent is shutting down")

func (b backend) Recovering() bool { return b.a.recovering.Load() }

func (b backend) SubscribeExecutor(call *executorpb.Call, s *httpapi.ExecutorStream) error {
	var err error
	if qerr := b.a.query(func() { err = b.a.subscribeExecutor(call, s) }); qerr != nil {
		return errStopping
	}
	return err
}

func (b backend) ExecutorCall(call *executorpb.Call) error {
	var err error
	if qerr := b.a.query(func() { err = b.a.executorCall(call) }); qerr != nil {
		return errStopping
	}
	return err
}

func (b backend) State() (*httpapi.StateView, error) {
	var v *httpapi.StateView
	if err := b.a.query(func() { v = b.a.stateView() }); err != nil {
		return nil, errStopping
	}
	return v, nil
}

func (b backend) Metrics() (map[string]float64, error) {
	var m map[string]float64
	if err := b.a.query(func() { m = b.a.metricsSnapshot() }); err != nil {
		return nil, errStopping
	}
	// The host's system/* metrics are read here, off the agent's loop.
	for k, v := range sysmetrics.Read() {
		m[k] = v
	}
	return m, nil
}

// lookupExecutor finds the framework and executor a call names.
func (a *Agent) lookupExecutor(call *executorpb.Call) (*framework, *executor, error) {
	fw := a.frameworks[call.GetFrameworkId().GetValue()]
	if fw == nil {
		return nil, nil, httpapi.Errorf(http.StatusBadRequest, "Framework cannot be found")
	}
	e := fw.executors[call.GetExecutorId().GetValue()]
	if e == nil {
		return nil, nil, httpapi.Errorf(http.StatusBadRequest, "Executor cannot be found")
	}
	return fw, e, nil
}

// subscribeExecutor attaches an executor's event stream (loop): SUBSCRIBED,
// then the replay of the updates the executor says are unacknowledged,
// then TASK_DROPPED/LOST for launched tasks it never heard of, then the
// queued launches.
func (a *Agent) subscribeExecutor(call *executorpb.Call, s executorConn) error {
	fw, e, err := a.lookupExecutor(call)
	if err != nil {
		return err
	}
	if e.phase == phaseTerminating || e.phase == phaseTerminated {
		a.log.Warn("telling a terminating executor to shut down", "framework", fw.id, "executor", e.id)
		s.Send(shutdownEvent())
		s.Close()
		return nil
	}
	if e.conn != nil {
		e.conn.Close()
	}
	e.conn = s
	e.phase = phaseRunning
	e.regTimer.Stop()
	a.executorReregistered(e)
	go func() {
		<-s.Done()
		a.post(func() { a.executorDisconnected(e, s) })
	}()
	s.Send(&executorpb.Event{
		Type: executorpb.Event_SUBSCRIBED.Enum(),
		Subscribed: &executorpb.Event_Subscribed{
			ExecutorInfo:  e.info,
			FrameworkInfo: fw.info,
			AgentInfo:     a.agentInfo(),
			ContainerId:   &mesos.ContainerID{Value: proto.String(e.containerID)},
		},
	})
	sub := call.GetSubscribe()
	for _, u := range sub.GetUnacknowledgedUpdates() {
		a.executorUpdate(fw, e, u.GetStatus())
	}
	known := map[string]bool{}
	for _, t := range sub.GetUnacknowledgedTasks() {
		known[t.GetTaskId().GetValue()] = true
	}
	for _, t := range e.liveTasks() {
		id := t.t.GetTaskId().GetValue()
		if !t.queued && t.t.GetState() == mesos.TaskState_TASK_STAGING && !known[id] {
			a.agentUpdate(fw, e, id, a.lostState(fw), mesos.TaskStatus_REASON_AGENT_RESTARTED,
				"Task launched during agent restart")
		}
	}
	a.flushQueue(e)
	a.log.Info("executor subscribed", "framework", fw.id, "executor", e.id)
	return nil
}

func (a *Agent) executorDisconnected(e *executor, s executorConn) {
	if e.conn == s {
		e.conn = nil
		a.log.Info("executor disconnected", "framework", e.fw.id, "executor", e.id)
	}
}

// executorCall handles UPDATE, MESSAGE and HEARTBEAT (loop).
func (a *Agent) executorCall(call *executorpb.Call) error {
	fw, e, err := a.lookupExecutor(call)
	if err != nil {
		return err
	}
	if e.phase == phaseRegistering {
		return httpapi.Errorf(http.StatusForbidden, "Executor is not subscribed")
	}
	switch call.GetType() {
	case executorpb.Call_UPDATE:
		a.executorUpdate(fw, e, call.GetUpdate().GetStatus())
	case executorpb.Call_MESSAGE:
		if !a.sendCall(&protocol.AgentCall{
			Type: protocol.AgentCall_FRAMEWORK_MESSAGE.Enum(),
			FrameworkMessage: &protocol.AgentCall_FrameworkMessage{
				FrameworkId: fw.info.GetId(),
				ExecutorId:  e.info.GetExecutorId(),
				Data:        call.GetMessage().GetData(),
			},
		}) {
			a.log.Warn("dropping executor message: not connected to a master", "executor", e.id)
		}
	}
	return nil
}

// executorUpdate takes a status update from the executor: the task's
// state changes, the status update manager takes it, and the executor gets
// ACKNOWLEDGED (the manager, not the scheduler, has it now).
func (a *Agent) executorUpdate(fw *framework, e *executor, status *mesos.TaskStatus) {
	st := proto.Clone(status).(*mesos.TaskStatus)
	st.AgentId = agentIDProto(a.sess.agentID)
	if st.ExecutorId == nil {
		st.ExecutorId = e.info.GetExecutorId()
	}
	if st.Timestamp == nil {
		st.Timestamp = proto.Float64(float64(a.clock.Now().UnixNano()) / 1e9)
	}
	if mesos.IsTerminal(st.GetState()) && st.GetState() != mesos.TaskState_TASK_FINISHED {
		// The container hit a limit (e.g. its task was OOM-killed): that,
		// not the executor's view of its child's death, is why the task
		// ended, as Mesos reports it.
		if l, ok := a.limitation(e.containerID); ok {
			st.State = mesos.TaskState_TASK_FAILED.Enum()
			st.Reason = l.Reason.Enum()
			st.Message = proto.String(l.Message)
		}
	}
	if !a.handleStatus(fw.id, fw.checkpoint(), e, st) {
		return
	}
	if e.conn != nil {
		e.conn.Send(&executorpb.Event{
			Type:         executorpb.Event_ACKNOWLEDGED.Enum(),
			Acknowledged: &executorpb.Event_Acknowledged{TaskId: st.GetTaskId(), Uuid: st.GetUuid()},
		})
	}
}

// limitation asks the containerizer whether the container hit a limit.
func (a *Agent) limitation(containerID string) (containerizer.Limitation, bool) {
	if lr, ok := a.cz.(containerizer.LimitationReporter); ok {
		return lr.Limitation(containerID)
	}
	return containerizer.Limitation{}, false
}

// stateView copies the loop's state for /state.
func (a *Agent) stateView() *httpapi.StateView {
	bi := version.Get()
	v := &httpapi.StateView{
		Version:      a.cfg.Version,
		GitSHA:       bi.GitSHA,
		BuildTime:    bi.BuildTime,
		BuildUser:    bi.BuildUser,
		StartTime:    a.startTime,
		ID:           a.sess.agentID,
		PID:          a.pid(),
		Hostname:     a.cfg.Hostname,
		Port:         a.cfg.Port,
		Resources:    a.total.Proto(),
		Attributes:   a.attributes,
		Flags:        a.flags(),
		Capabilities: []string{"MULTI_ROLE", "HIERARCHICAL_ROLE", "RESERVATION_REFINEMENT", "TASK_RESOURCE_LIMITS"},
	}
	if a.ovs.estimates {
		v.Oversubscribed = a.ovs.total.Proto()
		if v.Oversubscribed == nil {
			v.Oversubscribed = []*mesos.Resource{}
		}
	}
	if a.sess.registeredNow() && a.sess.masterInfo != nil {
		v.MasterHostname = a.sess.masterInfo.GetHostname()
	}
	for _, id := range a.fwOrder {
		v.Frameworks = append(v.Frameworks, frameworkView(a.frameworks[id]))
	}
	for _, fw := range a.completedF {
		v.CompletedFrameworks = append(v.CompletedFrameworks, frameworkView(fw))
	}
	return v
}

func frameworkView(fw *framework) httpapi.FrameworkView {
	fv := httpapi.FrameworkView{Info: fw.info}
	for _, id := range fw.order {
		fv.Executors = append(fv.Executors, executorView(fw.executors[id]))
	}
	for _, e := range fw.completed {
		fv.CompletedExecutors = append(fv.CompletedExecutors, executorView(e))
	}
	return fv
}

func executorView(e *executor) httpapi.ExecutorView {
	ev := httpapi.ExecutorView{Info: e.info, ContainerID: e.containerID, Directory: e.directory}
	for _, id := range e.taskOrder {
		t := e.tasks[id]
		switch {
		case t.terminal:
			ev.TerminatedTasks = append(ev.TerminatedTasks, proto.Clone(t.t).(*mesos.Task))
		case t.queued:
			ev.QueuedTasks = append(ev.QueuedTasks, t.info)
			ev.Queued = append(ev.Queued, proto.Clone(t.t).(*mesos.Task))
		default:
			ev.Tasks = append(ev.Tasks, proto.Clone(t.t).(*mesos.Task))
		}
	}
	ev.CompletedTasks = append(ev.CompletedTasks, e.completed...)
	return ev
}

func (a *Agent) flags() map[string]string {
	c := a.cfg
	return map[string]string{
		"master":                          strings.Join(c.Masters, ","),
		"ip":                              c.IP,
		"port":                            strconv.Itoa(c.Port),
		"hostname":                        c.Hostname,
		"work_dir":                        c.WorkDir,
		"resources":                       c.Resources,
		"attributes":                      c.Attributes,
		"containerizers":                  c.Containerizers,
		"isolation":                       c.Isolation,
		"launcher_dir":                    filepath.Dir(c.LauncherPath),
		"executor_registration_timeout":   fmtDur(c.ExecutorRegistrationTimeout),
		"executor_shutdown_grace_period":  fmtDur(c.ExecutorShutdownGracePeriod),
		"executor_reregistration_timeout": fmtDur(c.ExecutorReregistrationTimeout),
		"recovery_timeout":                fmtDur(c.RecoveryTimeout),
		"registration_backoff_factor":     fmtDur(c.RegistrationBackoff),
		"http_command_executor":           "false",
		"recover":                         c.Recover,
		"reconfiguration_policy":          c.ReconfigurationPolicy,
		"strict":                          strconv.FormatBool(!c.LenientRecovery),
		"cgroups_hierarchy":               orDefault(c.Cgroups.Hierarchy, "/sys/fs/cgroup"),
		"cgroups_root":                    orDefault(c.Cgroups.Root, "mezzo"),
		"cgroups_enable_cfs":              strconv.FormatBool(c.Cgroups.EnableCFS),
		"cgroups_limit_swap":              strconv.FormatBool(c.Cgroups.LimitSwap),
		"fetcher_cache_dir":               c.FetcherCacheDir,
		"fetcher_cache_size":              FormatBytes(max(c.FetcherCacheSize, 0)),
		"fetcher_allowed_dirs":            strings.Join(c.Fetcher.AllowedFileDirs, ","),
		"docker_socket":                   orDefault(c.Docker.Socket, "/var/run/docker.sock"),
		"docker_remove_delay":             fmtDur(orDefaultDur(c.Docker.RemoveDelay, 6*time.Hour)),
		"docker_kill_orphans":             strconv.FormatBool(!c.Docker.KeepOrphans),
		"sandbox_directory":               orDefault(c.Docker.SandboxDirectory, "/mnt/mesos/sandbox"),
		"docker_config":                   dockerConfigFlag(c.Docker),
		// Oversubscription (docs/oversubscription.md).
		"resource_estimator":                         c.Oversubscription.ResourceEstimator,
		"qos_controller":                             c.Oversubscription.QoSController,
		"oversubscribed_resources_interval":          fmtDur(c.Oversubscription.OversubscribedResourcesInterval),
		"qos_correction_interval_min":                fmtDur(c.Oversubscription.QoSCorrectionIntervalMin),
		"revocable_cpu_low_priority":                 strconv.FormatBool(c.Oversubscription.RevocableCPULowPriority == nil || *c.Oversubscription.RevocableCPULowPriority),
		"fixed_resource_estimator_resources":         c.Oversubscription.FixedResources,
		"load_qos_controller_threshold_5min":         optFloat(c.Oversubscription.LoadThreshold5Min),
		"load_qos_controller_threshold_15min":        optFloat(c.Oversubscription.LoadThreshold15Min),
		"slack_estimator_resources":                  strings.Join(c.Oversubscription.SlackResources, ","),
		"slack_estimator_margin":                     strconv.FormatFloat(c.Oversubscription.SlackMargin, 'g', -1, 64),
		"slack_estimator_window":                     fmtDur(c.Oversubscription.SlackWindow),
		"interference_qos_controller_throttle_ratio": strconv.FormatFloat(c.Oversubscription.ThrottleRatio, 'g', -1, 64),
	}
}

// metricsSnapshot computes /metrics/snapshot with Mesos's agent keys.
func (a *Agent) metricsSnapshot() map[string]float64 {
	m := map[string]float64{}
	uptime := 0.0
	if !a.startTime.IsZero() {
		uptime = a.clock.Now().Sub(a.startTime).Seconds()
	}
	m["slave/uptime_secs"] = uptime
	m["slave/registered"] = b2f(a.sess.registeredNow())
	m["slave/recovery_errors"] = float64(a.metrics.recoveryErrors)
	m["slave/http_authentication_failures"] = float64(a.authFailures.Load())
	if a.recovered {
		m["slave/recovery_time_secs"] = a.recoveryTime.Seconds()
	}
	m["slave/frameworks_active"] = float64(len(a.frameworks))
	states := map[mesos.TaskState]float64{}
	phases := map[executorPhase]float64{}
	used := map[string]float64{}
	usedRev := map[string]float64{}
	addRes := func(rs []*mesos.Resource) {
		for _, r := range rs {
			if r.GetType() != mesos.Value_SCALAR {
				continue
			}
			if r.Revocable != nil {
				usedRev[r.GetName()] += r.GetScalar().GetValue()
			} else {
				used[r.GetName()] += r.GetScalar().GetValue()
			}
		}
	}
	for _, fw := range a.frameworks {
		for _, e := range fw.executors {
			phases[e.phase]++
			if e.phase == phaseTerminated {
				continue
			}
			addRes(e.info.GetResources())
			for _, t := range e.liveTasks() {
				states[t.t.GetState()]++
				addRes(t.t.GetResources())
			}
		}
	}
	m["slave/tasks_staging"] = states[mesos.TaskState_TASK_STAGING]
	m["slave/tasks_starting"] = states[mesos.TaskState_TASK_STARTING]
	m["slave/tasks_running"] = states[mesos.TaskState_TASK_RUNNING]
	m["slave/tasks_killing"] = states[mesos.TaskState_TASK_KILLING]
	c := a.metrics
	m["slave/tasks_finished"] = float64(c.tasksFinished)
	m["slave/tasks_failed"] = float64(c.tasksFailed)
	m["slave/tasks_killed"] = float64(c.tasksKilled)
	m["slave/tasks_lost"] = float64(c.tasksLost)
	m["slave/tasks_error"] = float64(c.tasksError)
	m["slave/tasks_dropped"] = float64(c.tasksDropped)
	m["slave/tasks_gone"] = float64(c.tasksGone)
	m["slave/tasks_gone_by_operator"] = float64(c.tasksGoneByOperator)
	m["slave/executors_registering"] = phases[phaseRegistering]
	m["slave/executors_running"] = phases[phaseRunning]
	m["slave/executors_terminating"] = phases[phaseTerminating]
	m["slave/executors_terminated"] = float64(c.executorsTerminated)
	m["slave/executors_preempted"] = float64(a.ovs.qosPreempted + a.ovs.lentEvicted)
	m["slave/valid_status_updates"] = float64(c.validUpdates)
	m["slave/invalid_status_updates"] = float64(c.invalidUpdates)
	m["slave/valid_framework_messages"] = float64(c.validFrameworkMessages)
	m["slave/invalid_framework_messages"] = float64(c.invalidFrameworkMessages)
	m["slave/container_launch_errors"] = float64(c.containerLaunchErrors)
	m["containerizer/mesos/container_destroy_errors"] = float64(c.containerDestroyErrors)
	m["containerizer/fetcher/task_fetches_succeeded"] = float64(c.fetchesSucceeded)
	m["containerizer/fetcher/task_fetches_failed"] = float64(c.fetchesFailed)
	// mezzo's own (Mesos's agent exits instead): see docs/reservations.md.
	m["slave/checkpoint_resources_refused"] = float64(c.checkpointResourcesRefused)
	m["slave/volume_errors"] = float64(c.volumeErrors)
	m["slave/volumes_kept_in_use"] = float64(c.volumesKept)
	// mezzo's own oversubscription counters (docs/oversubscription.md):
	// executors_preempted is their sum of qos_corrections and
	// lent_evictions.
	m["slave/qos_corrections"] = float64(a.ovs.qosPreempted)
	m["slave/qos_corrections_ignored"] = float64(a.ovs.correctionsIgnored)
	m["slave/qos_corrections_refused"] = float64(a.ovs.correctionsRefused)
	m["slave/qos_controller_errors"] = float64(a.ovs.qosErrors)
	m["slave/lent_evictions"] = float64(a.ovs.lentEvicted)
	m["slave/resource_estimator_errors"] = float64(a.ovs.estimateErrors)
	m["slave/oversubscribed_updates_sent"] = float64(a.ovs.updatesSent)
	// The revocable total is the oversubscribed total the agent tells the
	// master (its estimate plus the throttle-able resources containers
	// hold), as Mesos's agent; used is every revocable resource its
	// containers hold, lent reservations included, as Mesos counts it.
	nonRev, rev := a.total.NonRevocable(), a.ovs.total
	for _, name := range []string{"cpus", "mem", "disk", "gpus"} {
		total := nonRev.Scalar(name)
		m["slave/"+name+"_total"] = total
		m["slave/"+name+"_used"] = used[name]
		m["slave/"+name+"_percent"] = percent(used[name], total)
		rtotal := rev.Scalar(name)
		m["slave/"+name+"_revocable_total"] = rtotal
		m["slave/"+name+"_revocable_used"] = usedRev[name]
		m["slave/"+name+"_revocable_percent"] = percent(usedRev[name], rtotal)
	}
	return m
}

// dockerConfigFlag is --docker_config as /flags shows it: a path as
// given, inline JSON only by its registries (never the credentials).
func dockerConfigFlag(d DockerConfig) string {
	v := strings.TrimSpace(d.Config)
	if v == "" || !strings.HasPrefix(v, "{") {
		return v
	}
	return "(inline JSON with credentials for: " + strings.Join(d.registryAuth.Registries(), ", ") + ")"
}

// optFloat is an optional number as /flags shows it ("" when unset).
func optFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func orDefaultDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

func percent(used, total float64) float64 {
	if total == 0 {
		return 0
	}
	return used / total
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func fmtDur(d time.Duration) string { return stout.FormatDuration(d) }
