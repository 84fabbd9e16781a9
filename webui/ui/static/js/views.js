// views.js: the pages. A view is {mount(root, params) -> {update(store)}}:
// mount builds the page once per navigation, update refills it with each
// refresh of the master's state (store.state, store.metrics), so filters,
// sorting and pages survive the refresh.
"use strict";

// --- reading /master/state ---

// frameworksOf lists registered then completed frameworks, marking the latter.
function frameworksOf(state) {
  return (state.frameworks || []).map((f) => Object.assign({completed: false}, f))
    .concat((state.completed_frameworks || []).map((f) => Object.assign({}, f, {completed: true})));
}

function rolesOf(fw) {
  return fw.roles || (fw.role !== undefined ? [fw.role] : []);
}

// tasksOf lists every task the master knows, each with its framework.
function tasksOf(state, filter) {
  const out = [];
  for (const fw of frameworksOf(state)) {
    for (const group of ["tasks", "unreachable_tasks", "completed_tasks"]) {
      for (const t of fw[group] || []) {
        if (!filter || filter(t, fw)) out.push(Object.assign({framework_name: fw.name}, t));
      }
    }
  }
  for (const t of state.orphan_tasks || []) {
    if (!filter || filter(t, null)) out.push(Object.assign({framework_name: "(orphan)"}, t));
  }
  return out;
}

function agentById(state, id) {
  return (state.slaves || []).find((a) => a.id === id);
}

// started is a task's first status time.
function started(t) {
  const ts = (t.statuses || []).map((s) => s.timestamp).filter((x) => x > 0);
  return ts.length ? Math.min(...ts) : 0;
}

function liveTaskCounts(state) {
  const byAgent = {}, byFramework = {};
  for (const fw of state.frameworks || []) {
    for (const t of fw.tasks || []) {
      if (TERMINAL.has(t.state)) continue;
      byAgent[t.slave_id] = (byAgent[t.slave_id] || 0) + 1;
      byFramework[fw.id] = (byFramework[fw.id] || 0) + 1;
    }
  }
  return {byAgent, byFramework};
}

// agentLabel names an agent by host:port when the master knows it.
function agentLabel(id) {
  const a = store.state && agentById(store.state, id);
  return a ? hostPort(a) : id;
}

// frameworkName names a framework when the master knows it.
function frameworkName(id) {
  const f = store.state && frameworksOf(store.state).find((x) => x.id === id);
  return f && f.name ? f.name : id;
}

// --- links ---

const link = {
  task: (t, text) => el("a", {href: `#/tasks/${encodeURIComponent(t.framework_id)}/${encodeURIComponent(t.id)}`,
    title: "the task's history, health, usage and output"}, text || t.id),
  framework: (id, text) => el("a", {href: "#/frameworks/" + encodeURIComponent(id)}, text || id),
  agent: (id, text) => el("a", {href: "#/agents/" + encodeURIComponent(id)}, text || id),
  sandbox: (t, text) => el("a", {href: `#/task/${encodeURIComponent(t.slave_id)}/${encodeURIComponent(t.framework_id)}/${encodeURIComponent(t.id)}`,
    title: "browse the task's sandbox and read its stdout/stderr"}, text || "sandbox"),
};

// --- shared pieces ---

function card(label, value, detail, fraction) {
  return el("div", {class: "card"},
    el("div", {class: "label"}, label),
    el("div", {class: "value"}, value),
    detail ? el("div", {class: "detail"}, detail) : null,
    fraction !== undefined ? el("div", {class: "bar"}, el("span", {style: {width: Math.min(100, fraction * 100) + "%"}})) : null);
}

function kv(pairs) {
  const dl = el("dl", {class: "kv"});
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === "") continue;
    dl.appendChild(el("dt", {}, k));
    dl.appendChild(el("dd", {}, v));
  }
  return dl;
}

// taskTable lists tasks; opts.agent/opts.framework hide redundant columns.
function taskTable(opts = {}) {
  const cols = [
    {label: "ID", value: (t) => t.id, render: (t) => el("span", {class: "mono"}, link.task(t))},
    {label: "Name", value: (t) => t.name},
    {label: "State", value: (t) => t.state, render: (t) => statePill(t.state)},
  ];
  if (!opts.framework) cols.push({label: "Framework", value: (t) => t.framework_name || t.framework_id,
    render: (t) => link.framework(t.framework_id, t.framework_name || t.framework_id)});
  if (!opts.agent) cols.push({label: "Agent", value: (t) => agentLabel(t.slave_id), render: (t) => t.slave_id ? link.agent(t.slave_id, agentLabel(t.slave_id)) : "–"});
  cols.push(
    {label: "CPUs", num: true, value: (t) => scalar(t.resources, "cpus"), render: (t) => fmt.num(scalar(t.resources, "cpus"))},
    {label: "Mem", num: true, value: (t) => scalar(t.resources, "mem"), render: (t) => fmt.mem(scalar(t.resources, "mem"))},
    {label: "Started", value: (t) => started(t), render: (t) => el("span", {title: fmt.time(started(t))}, fmt.ago(started(t)))},
    {label: "", value: () => "", render: (t) => t.slave_id ? link.sandbox(t) : ""});
  return new DataTable({columns: cols, pageSize: opts.pageSize || 50, sort: cols.findIndex((c) => c.label === "Started"), desc: true,
    empty: opts.empty || "No tasks."});
}

// stateSelect filters tasks: live, all, or one state.
function stateSelect(onchange, initial) {
  const sel = el("select", {onchange: () => onchange(sel.value)},
    el("option", {value: "live"}, "Live tasks"), el("option", {value: "all"}, "All tasks"),
    ["TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_UNREACHABLE", "TASK_FINISHED",
      "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED", "TASK_GONE"].map((s) => el("option", {value: s}, s)));
  sel.value = initial || "live";
  return sel;
}

function matchState(filter, t) {
  if (filter === "all") return true;
  if (filter === "live") return !TERMINAL.has(t.state);
  return t.state === filter;
}

// --- overview ---

const TASK_STATE_METRICS = [
  ["TASK_STAGING", "master/tasks_staging"], ["TASK_STARTING", "master/tasks_starting"],
  ["TASK_RUNNING", "master/tasks_running"], ["TASK_KILLING", "master/tasks_killing"],
  ["TASK_UNREACHABLE", "master/tasks_unreachable"], ["TASK_FINISHED", "master/tasks_finished"],
  ["TASK_FAILED", "master/tasks_failed"], ["TASK_KILLED", "master/tasks_killed"],
  ["TASK_LOST", "master/tasks_lost"], ["TASK_ERROR", "master/tasks_error"],
  ["TASK_DROPPED", "master/tasks_dropped"], ["TASK_GONE", "master/tasks_gone"],
];

const overviewView = {
  mount(root) {
    let live = null;
    const resources = el("div", {class: "grid"});
    const counts = el("div", {class: "grid"});
    const tasks = el("div", {class: "grid"});
    const master = el("div", {class: "panel"});
    const agents = new DataTable({pageSize: 10, empty: "No agents registered.", columns: agentColumns(() => live)});
    const frameworks = new DataTable({pageSize: 10, empty: "No frameworks subscribed.", columns: frameworkColumns(() => live)});
    replace(root,
      el("h1", {}, "Cluster"), el("div", {class: "subtitle", id: "cluster-subtitle"}),
      resources, el("h2", {}, "Agents, frameworks and offers"), counts,
      el("h2", {}, "Tasks by state"), tasks,
      el("div", {class: "cols"},
        el("div", {}, el("h2", {}, "Frameworks"), frameworks.node),
        el("div", {}, el("h2", {}, "Agents"), agents.node)),
      el("h2", {}, "Master"), master);
    const subtitle = root.querySelector("#cluster-subtitle");
    return {update: (store) => {
      const s = store.state, m = store.metrics || {};
      live = liveTaskCounts(s);
      subtitle.textContent = `${s.cluster ? s.cluster + " · " : ""}master ${s.hostname || s.pid} · mezzo ${s.version}`;
      const res = [["CPUs", "cpus", fmt.num], ["Memory", "mem", fmt.mem], ["Disk", "disk", fmt.mem], ["GPUs", "gpus", fmt.num]];
      replace(resources, res.filter(([, k]) => k !== "gpus" || m["master/gpus_total"] > 0).map(([label, k, f]) => {
        const used = m[`master/${k}_used`] || 0, total = m[`master/${k}_total`] || 0;
        return card(label + " allocated", `${f(used)} / ${f(total)}`, total ? fmt.pct(used / total) + " of the cluster" : "no agents", total ? used / total : 0);
      }));
      const agentsN = (s.slaves || []).length;
      const draining = (s.slaves || []).filter((a) => a.drain_info && a.drain_info.state === "DRAINING").length;
      replace(counts,
        card("Agents", `${s.activated_slaves} active`, `${agentsN} registered · ${s.deactivated_slaves} inactive · ` +
          (draining ? `${draining} draining · ` : "") + `${s.unreachable_slaves} unreachable`),
        card("Frameworks", `${m["master/frameworks_active"] ?? (s.frameworks || []).length} active`,
          `${(s.frameworks || []).length} registered · ${(s.completed_frameworks || []).length} completed`),
        card("Outstanding offers", fmt.num(m["master/outstanding_offers"] || 0), "offers frameworks have not answered yet"));
      replace(tasks, TASK_STATE_METRICS.filter(([st, key]) => m[key] || ["TASK_RUNNING", "TASK_STAGING", "TASK_FAILED", "TASK_FINISHED"].includes(st))
        .map(([st, key]) => el("a", {href: "#/tasks?state=" + st, class: "card", style: {textDecoration: "none", color: "inherit"}},
          el("div", {class: "label"}, st.replace(/^TASK_/, "").toLowerCase()), el("div", {class: "value"}, fmt.num(m[key] || 0)),
          el("div", {class: "detail"}, TERMINAL.has(st) ? "since the master started" : "now"))));
      agents.setRows(s.slaves || []);
      frameworks.setRows(s.frameworks || []);
      const leader = s.leader_info ? `${s.leader_info.hostname}:${s.leader_info.port}` : (s.leader || "none");
      replace(master, kv([
        ["Leader", leader + (s.leader && s.pid === s.leader ? " (this master)" : "")],
        ["This master", s.pid], ["Version", s.version + (s.git_sha ? ` (${s.git_sha})` : "")],
        ["Started", fmt.time(s.start_time) + " · " + fmt.ago(s.start_time)],
        ["Elected", s.elected_time ? fmt.time(s.elected_time) : "not elected"],
        ["Work dir", s.flags && s.flags.work_dir],
        ["Raw state", el("a", {href: ROUTES.state}, "JSON")],
      ]));
    }};
  },
};

// hostPort names an agent: several agents may share a host (mezzo local).
function hostPort(a) {
  return a.port ? `${a.hostname}:${a.port}` : a.hostname;
}

// agentStatus is an agent's status as an operator needs it: its drain
// (DRAIN_AGENT: DRAINING until its tasks are gone, then DRAINED), an
// operator's deactivation (DEACTIVATE_AGENT), or active/inactive.
function agentStatus(a) {
  const d = a.drain_info;
  if (d && d.state) return d.state;
  if (a.deactivated) return "deactivated";
  return a.active ? "active" : "inactive";
}

function agentStatusPill(a) {
  const s = agentStatus(a);
  return el("span", {class: s === "active" ? "pill ok" : "pill warn", title: drainText(a) || null}, s.toLowerCase());
}

// drainText describes a drain's config: "max grace 8s · mark gone".
function drainText(a) {
  const c = a.drain_info && a.drain_info.config;
  if (!c) return "";
  const parts = [];
  if (c.max_grace_period && typeof c.max_grace_period.nanoseconds === "number") {
    parts.push("max grace " + fmt.duration(c.max_grace_period.nanoseconds / 1e9));
  } else {
    parts.push("tasks' own grace periods");
  }
  if (c.mark_gone) parts.push("mark gone when drained");
  return parts.join(" · ");
}

function agentColumns(live) {
  return [
    {label: "Host", value: (a) => hostPort(a), render: (a) => link.agent(a.id, hostPort(a))},
    {label: "CPUs", num: true, value: (a) => scalar(a.used_resources, "cpus"),
      render: (a) => usageCell(scalar(a.used_resources, "cpus"), scalar(a.resources, "cpus"))},
    {label: "Mem", num: true, value: (a) => scalar(a.used_resources, "mem"),
      render: (a) => usageCell(scalar(a.used_resources, "mem"), scalar(a.resources, "mem"), fmt.mem)},
    {label: "Tasks", num: true, value: (a) => (live() || {byAgent: {}}).byAgent[a.id] || 0},
    {label: "Status", value: (a) => agentStatus(a), render: (a) => agentStatusPill(a)},
  ];
}

function frameworkColumns(live) {
  return [
    {label: "Name", value: (f) => f.name, render: (f) => link.framework(f.id, f.name || f.id)},
    {label: "Roles", value: (f) => rolesOf(f).join(", ")},
    {label: "Tasks", num: true, value: (f) => (live() || {byFramework: {}}).byFramework[f.id] || 0},
    {label: "CPUs", num: true, value: (f) => scalar(f.used_resources, "cpus"), render: (f) => fmt.num(scalar(f.used_resources, "cpus"))},
    {label: "Mem", num: true, value: (f) => scalar(f.used_resources, "mem"), render: (f) => fmt.mem(scalar(f.used_resources, "mem"))},
    {label: "Status", value: (f) => f.active, render: (f) => f.completed ? el("span", {class: "pill"}, "completed")
      : f.active ? el("span", {class: "pill ok"}, "active") : el("span", {class: "pill warn"}, f.connected ? "inactive" : "disconnected")},
  ];
}

// --- frameworks ---

const frameworksView = {
  mount(root) {
    let live = null;
    const cols = [{label: "ID", value: (f) => f.id, render: (f) => el("span", {class: "mono"}, link.framework(f.id))}]
      .concat(frameworkColumns(() => live), [
        {label: "Offers", num: true, value: (f) => (f.offers || []).length},
        {label: "Registered", value: (f) => f.registered_time, render: (f) => fmt.ago(f.registered_time)},
      ]);
    const active = new DataTable({columns: cols, empty: "No frameworks subscribed. Start one, e.g. mezzo run -- echo hello."});
    const done = new DataTable({columns: cols, pageSize: 20, empty: "No completed frameworks."});
    replace(root, el("h1", {}, "Frameworks"), el("div", {class: "subtitle"}, "Schedulers subscribed to this master."),
      active.node, el("h2", {}, "Completed frameworks"), done.node);
    return {update: (store) => {
      live = liveTaskCounts(store.state);
      active.setRows(store.state.frameworks || []);
      done.setRows((store.state.completed_frameworks || []).map((f) => Object.assign({completed: true}, f)));
    }};
  },
};

// REASON_TEXT explains the allocator's reasons in plain words.
const REASON_TEXT = {
  UNKNOWN_FRAMEWORK: "The allocator does not know this framework.",
  FRAMEWORK_INACTIVE: "The framework is not connected: its scheduler must re-subscribe before it is offered anything.",
  SUPPRESSED: "The framework suppressed offers for this role; it gets none until its scheduler sends REVIVE.",
  ALLOCATION_PAUSED: "A newly elected master is waiting for the agents to re-register before it offers anything.",
  NO_ACTIVE_AGENTS: "There are no active agents.",
  NOTHING_FREE_IN_ROLE: "Nothing is free for this role: every resource it may use is allocated or offered.",
  OVER_QUOTA_LIMIT: "The role has reached its quota limit.",
  BELOW_MIN_ALLOCATABLE: "What is free is smaller than the minimum the master offers.",
  GPU_AGENTS_ONLY: "Only GPU agents have free resources, and the framework lacks the GPU_RESOURCES capability.",
  FILTERED: "The framework declined these resources with a filter that has not expired; REVIVE clears it.",
  EXCLUDED_BY_OFFER_CONSTRAINTS: "The framework's offer constraints exclude the agents with free resources.",
  ELIGIBLE: "Resources can be offered: it gets them when its role comes first in fair-share (DRF) order.",
};

const AGENT_COUNT_TEXT = [["eligible", "eligible"], ["nothing_free", "with nothing free"], ["over_quota_limit", "kept by the quota limit"],
  ["below_min_allocatable", "below the minimum allocatable"], ["gpu_agent", "GPU-only"], ["filtered", "filtered"],
  ["offer_constraints", "excluded by offer constraints"]];

function explanationNode(ex) {
  const out = el("div", {class: "explain"});
  out.appendChild(el("div", {class: "muted"}, ex.last_offer ? `Last offered resources ${fmt.ago(ex.last_offer)} (${fmt.time(ex.last_offer)}).` : "Never offered resources."));
  for (const r of ex.roles || []) {
    const counts = AGENT_COUNT_TEXT.filter(([k]) => r.agents && r.agents[k] > 0).map(([k, text]) => `${r.agents[k]} ${text}`);
    out.appendChild(el("div", {class: "role"},
      el("strong", {}, r.role ? `Role ${r.role}: ` : ""),
      el("span", {class: r.reason === "ELIGIBLE" ? "pill ok" : "pill warn"}, r.reason === "ELIGIBLE" ? "offers possible" : "no offers: " + r.reason),
      el("p", {class: "why"}, REASON_TEXT[r.reason] || r.message),
      counts.length ? el("div", {class: "agents"}, "Active agents: " + counts.join(", ")) : null));
  }
  return out;
}

const frameworkView = {
  mount(root, params) {
    const id = params[0];
    const head = el("div");
    const info = el("div", {class: "panel"});
    const why = el("div", {class: "panel"}, el("div", {class: "explain muted"}, "Asking the allocator…"));
    const offers = new DataTable({pageSize: 10, empty: "No outstanding offers.", columns: [
      {label: "Offer", value: (o) => o.id, render: (o) => el("span", {class: "mono"}, o.id)},
      {label: "Agent", value: (o) => o.slave_id, render: (o) => link.agent(o.slave_id)},
      {label: "Role", value: (o) => (o.allocation_info || {}).role || ""},
      {label: "Resources", value: (o) => fmt.res(o.resources)},
    ]});
    let filter = "live", refill = () => {};
    const tasks = taskTable({framework: true});
    tasks.extra.appendChild(stateSelect((v) => { filter = v; refill(); }));
    replace(root, el("div", {class: "crumbs"}, el("a", {href: "#/frameworks"}, "Frameworks"), " / ", id), head,
      el("div", {class: "cols"},
        el("div", {}, el("h2", {}, "Framework"), info),
        el("div", {}, el("h2", {}, "Why (no) offers?"), why)),
      el("h2", {}, "Tasks"), tasks.node, el("h2", {}, "Offers"), offers.node);
    let lastExplain = 0;
    return {update: (store) => {
      const fw = frameworksOf(store.state).find((f) => f.id === id);
      if (!fw) {
        replace(head, el("h1", {}, id), el("div", {class: "subtitle"}, "This master does not know the framework (it may have been removed from its bounded history)."));
        return;
      }
      replace(head, el("h1", {}, fw.name || id), el("div", {class: "subtitle mono"}, id));
      replace(info, kv([
        ["Status", fw.completed ? "completed" : fw.active ? "active" : fw.connected ? "inactive" : "disconnected"],
        ["Roles", rolesOf(fw).join(", ")], ["User", fw.user], ["Principal", fw.principal],
        ["Hostname", fw.hostname], ["Registered", fw.registered_time ? fmt.time(fw.registered_time) : null],
        ["Failover timeout", fw.failover_timeout ? fw.failover_timeout + "s" : "0"],
        ["Checkpointing", fw.checkpoint ? "yes" : "no"],
        ["Capabilities", (fw.capabilities || []).join(", ")],
        ["Used", fmt.res(fw.used_resources)], ["Offered", fmt.res(fw.offered_resources)],
        ["Web UI", fw.webui_url ? el("a", {href: fw.webui_url}, fw.webui_url) : null],
      ]));
      refill = () => tasks.setRows(tasksOf(store.state, (t, f) => f && f.id === id && matchState(filter, t)));
      refill();
      offers.setRows(fw.offers || []);
      // The explanation is a mezzo extension; re-ask at most every 5s.
      if (fw.completed) {
        replace(why, el("div", {class: "explain muted"}, "The framework is completed: it gets no offers."));
      } else if (Date.now() - lastExplain > 4000) {
        lastExplain = Date.now();
        masterJSON(ROUTES.explain, {framework_id: id}).then((ex) => replace(why, explanationNode(ex)),
          (e) => replace(why, el("div", {class: "explain muted"}, e.status === 501 ? "This master's allocator cannot explain its decisions." : e.message)));
      }
    }};
  },
};

// --- agents ---

const agentsView = {
  mount(root) {
    let live = null;
    const cols = [{label: "ID", value: (a) => a.id, render: (a) => el("span", {class: "mono"}, link.agent(a.id))}]
      .concat(agentColumns(() => live), [
        {label: "Disk", num: true, value: (a) => scalar(a.used_resources, "disk"),
          render: (a) => usageCell(scalar(a.used_resources, "disk"), scalar(a.resources, "disk"), fmt.mem)},
        {label: "Registered", value: (a) => a.registered_time, render: (a) => fmt.ago(a.reregistered_time || a.registered_time)},
        {label: "Version", value: (a) => a.version},
      ]);
    const table = new DataTable({columns: cols, empty: "No agents registered. Start one: mezzo agent --master=<this master>."});
    replace(root, el("h1", {}, "Agents"), el("div", {class: "subtitle"}, "Nodes that offer their resources through this master."), table.node);
    return {update: (store) => {
      live = liveTaskCounts(store.state);
      table.setRows(store.state.slaves || []);
    }};
  },
};

const agentView = {
  mount(root, params) {
    const id = params[0];
    const head = el("div"), info = el("div", {class: "panel"}), res = el("div", {class: "panel"});
    const executors = el("div", {class: "panel"}, el("div", {class: "empty"}, "Reading the agent…"));
    const reservations = el("div"), volumes = el("div");
    const readReservations = agentReservations(id, reservations, volumes);
    let filter = "live", refill = () => {};
    const tasks = taskTable({agent: true});
    tasks.extra.appendChild(stateSelect((v) => { filter = v; refill(); }));
    replace(root, el("div", {class: "crumbs"}, el("a", {href: "#/agents"}, "Agents"), " / ", id), head,
      el("div", {class: "cols"}, el("div", {}, el("h2", {}, "Agent"), info), el("div", {}, el("h2", {}, "Resources"), res)),
      el("h2", {}, "Reservations"), reservations, el("h2", {}, "Persistent volumes"), volumes,
      el("h2", {}, "Tasks"), tasks.node, el("h2", {}, "Executors and sandboxes"), executors);
    let asked = false;
    return {update: (store) => {
      const a = agentById(store.state, id);
      if (!a) {
        replace(head, el("h1", {}, id), el("div", {class: "subtitle"}, "This agent is not registered with the master."));
        return;
      }
      replace(head, el("h1", {}, hostPort(a)), el("div", {class: "subtitle mono"}, id));
      const attrs = Object.entries(a.attributes || {}).map(([k, v]) => `${k}:${v}`).join(", ");
      replace(info, kv([
        ["Status", agentStatus(a)], ["Drain", a.drain_info ? drainText(a) : null], ["PID", a.pid], ["Version", a.version],
        ["Registered", fmt.time(a.registered_time)], ["Re-registered", a.reregistered_time ? fmt.time(a.reregistered_time) : null],
        ["Attributes", attrs], ["Capabilities", (a.capabilities || []).join(", ")],
      ]));
      const reserved = Object.entries(a.reserved_resources || {}).map(([role, r]) => [`Reserved (${role})`, fmt.res(r)]);
      // Revocable resources (docs/oversubscription.md): the agent's
      // estimated slack and, with --lend_idle_reservations, its idle
      // reservations; shown apart, with what tasks use of them.
      const rev = revocableOf(a.resources), revUsed = revocableOf(a.used_resources);
      const revText = Object.values(rev).some((v) => v > 0) ? fmt.res(rev) + " (in use: " + fmt.res(revUsed) + ")" : null;
      replace(res, kv([["Total", fmt.res(a.resources)], ["Revocable", revText], ["Allocated", fmt.res(a.used_resources)],
        ["Offered", fmt.res(a.offered_resources)], ["Unreserved", fmt.res(a.unreserved_resources)]].concat(reserved)));
      refill = () => tasks.setRows(tasksOf(store.state, (t) => t.slave_id === id && matchState(filter, t)));
      refill();
      readReservations();
      if (!asked) {
        asked = true;
        agentJSON(a.id, ROUTES.agentState).then((st) => replace(executors, executorList(a, st)),
          (e) => replace(executors, el("div", {class: "empty"}, e.message)));
      }
    }};
  },
};

// revocableOf keeps a resource summary's revocable scalars
// ("cpus_revocable"), named without the suffix.
function revocableOf(r) {
  const out = {};
  for (const [k, v] of Object.entries(r || {})) {
    if (k.endsWith("_revocable")) out[k.slice(0, -"_revocable".length)] = v;
  }
  return out;
}

function executorList(agent, st) {
  const rows = [];
  for (const [fws, fwDone] of [[st.frameworks, false], [st.completed_frameworks, true]]) {
    for (const fw of fws || []) {
      for (const [exs, exDone] of [[fw.executors, false], [fw.completed_executors, true]]) {
        for (const ex of exs || []) rows.push({fw, ex, done: fwDone || exDone});
      }
    }
  }
  const table = new DataTable({pageSize: 20, empty: "No executors on this agent.", columns: [
    {label: "Executor", value: (r) => r.ex.id, render: (r) => el("span", {class: "mono"}, r.ex.id)},
    {label: "Framework", value: (r) => r.fw.name || r.fw.id, render: (r) => link.framework(r.fw.id, r.fw.name || r.fw.id)},
    {label: "Tasks", num: true, value: (r) => (r.ex.tasks || []).length + (r.ex.queued_tasks || []).length},
    {label: "Resources", value: (r) => fmt.res(r.ex.resources)},
    {label: "Status", value: (r) => r.done, render: (r) => r.done ? el("span", {class: "pill"}, "completed") : el("span", {class: "pill ok"}, "running")},
    {label: "", value: () => "", render: (r) => r.ex.directory ? el("a", {href: sandboxHash(agent.id, r.ex.directory)}, "sandbox") : "–"},
  ]});
  table.setRows(rows);
  return table.node;
}

// --- tasks ---

const tasksView = {
  mount(root, params, query) {
    let filter = query.get("state") || "live", refill = () => {};
    const tasks = taskTable({pageSize: 100});
    tasks.extra.appendChild(stateSelect((v) => { filter = v; refill(); }, filter));
    replace(root, el("h1", {}, "Tasks"), el("div", {class: "subtitle"}, "Every task the master knows, newest first."), tasks.node);
    return {update: (store) => {
      refill = () => tasks.setRows(tasksOf(store.state, (t) => matchState(filter, t)));
      refill();
    }};
  },
};

// --- roles ---

function quotaText(m) {
  const keys = Object.keys(m || {}).sort();
  return keys.length ? keys.map((k) => `${k} ${k === "mem" || k === "disk" ? fmt.mem(m[k]) : fmt.num(m[k])}`).join(" · ") : "–";
}

const rolesView = {
  mount(root) {
    const table = new DataTable({empty: "No roles.", columns: [
      {label: "Role", value: (r) => r.name, render: (r) => el("strong", {}, r.name)},
      {label: "Weight", num: true, value: (r) => r.weight},
      {label: "Quota guarantee", value: (r) => quotaText(r.quota && r.quota.guarantee)},
      {label: "Quota limit", value: (r) => quotaText(r.quota && r.quota.limit)},
      {label: "Allocated", value: (r) => fmt.res(r.allocated)},
      {label: "Offered", value: (r) => fmt.res(r.offered)},
      {label: "Reserved", value: (r) => fmt.res(r.reserved)},
      {label: "Dominant share", num: true, value: (r) => r.share, render: (r) => r.share === null ? "–" : fmt.pct(r.share)},
      {label: "Frameworks", value: (r) => (r.frameworks || []).length, render: (r) => (r.frameworks || []).length ?
        (r.frameworks || []).map((id, i) => [i ? ", " : "", link.framework(id, frameworkName(id))]) : "–"},
    ]});
    const note = el("div", {class: "subtitle"}, "Weighted DRF: a role's share of the cluster, divided by its weight, decides who is offered next. Quota guarantees are offered first; limits cap what a role may hold.");
    replace(root, el("h1", {}, "Roles"), note, table.node);
    return {update: (store) => {
      masterJSON(ROUTES.roles).then((doc) => {
        const m = store.metrics || {};
        table.setRows((doc.roles || []).map((r) => Object.assign({}, r, {share: dominantShare(m, r)})));
      }, (e) => showBanner(e.message, true));
    }};
  },
};

// dominantShare prefers the allocator's own metric; else the largest
// fraction of a cluster total the role's allocation takes.
function dominantShare(m, role) {
  const reported = m[`allocator/mesos/roles/${role.name}/shares/dominant`];
  if (reported !== undefined) return reported;
  let share = null;
  for (const k of ["cpus", "mem", "disk", "gpus"]) {
    const total = m[`master/${k}_total`];
    if (total === undefined) continue;
    share = Math.max(share || 0, total > 0 ? scalar(role.allocated, k) / total : 0);
  }
  return share;
}
