// task.js: one task's page, #/tasks/<framework>/<task>: what it is and
// where it runs, its health, every status the master kept (time, state,
// source, reason, message, health), its container's resource usage (the
// agent's /monitor/statistics, through the master), and its stdout/stderr
// followed as they are written, with a link to the whole sandbox.
"use strict";

// lastHealth is the health the task's latest status reported, if any.
function lastHealth(t) {
  const st = (t.statuses || []).filter((s) => s.healthy !== undefined);
  return st.length ? st[st.length - 1].healthy : undefined;
}

function healthPill(t) {
  const h = lastHealth(t);
  if (h === undefined) return el("span", {class: "pill"}, t.health_check ? "not checked yet" : "no health check");
  return boolPill(h, "healthy", "unhealthy");
}

// checkText names a task's health check: "HTTP :8080/health every 10s".
function checkText(hc) {
  if (!hc) return null;
  const type = hc.type || (hc.http ? "HTTP" : hc.tcp ? "TCP" : hc.command ? "COMMAND" : "");
  let what = "";
  if (hc.http) what = ` :${hc.http.port}${hc.http.path || "/"}`;
  else if (hc.tcp) what = ` :${hc.tcp.port}`;
  else if (hc.command) what = ` ${hc.command.value || (hc.command.arguments || []).join(" ")}`;
  return `${type}${what}${hc.interval_seconds ? ` every ${hc.interval_seconds}s` : ""}`;
}

// labelsText renders [{key, value}] as "k=v, k2=v2".
function labelsText(labels) {
  return (labels || []).map((l) => l.value !== undefined ? `${l.key}=${l.value}` : l.key).join(", ");
}

// usageOf finds the task's container in /monitor/statistics: the entry of
// its executor (a command task's executor has the task's ID).
function usageOf(stats, t) {
  const ex = t.executor_id || t.id;
  return (stats || []).find((u) => u.framework_id === t.framework_id && u.executor_id === ex);
}

// cpuRate is the CPU time the container used per second between two samples.
function cpuRate(prev, cur) {
  if (!prev || !cur) return null;
  const dt = cur.timestamp - prev.timestamp;
  if (!(dt > 0)) return null;
  const used = (cur.cpus_user_time_secs || 0) + (cur.cpus_system_time_secs || 0) -
    (prev.cpus_user_time_secs || 0) - (prev.cpus_system_time_secs || 0);
  return Math.max(0, used / dt);
}

const taskView = {
  mount(root, params) {
    const [fwId, taskId] = params;
    const crumbs = el("div", {class: "crumbs"}, el("a", {href: "#/tasks"}, "Tasks"), " / ", taskId);
    const head = el("div", {}, el("h1", {}, taskId));
    const info = el("div", {class: "panel"});
    const health = el("div", {class: "panel"});
    const usage = el("div", {class: "grid", id: "task-usage"}, el("div", {class: "card muted"}, "Reading the agent's statistics…"));
    const output = el("div", {id: "task-output"}, el("div", {class: "panel"}, el("div", {class: "empty"}, "Locating the sandbox…")));
    const history = new DataTable({pageSize: 50, sort: 0, empty: "No status yet.", columns: [
      {label: "Time", value: (s) => s.timestamp, render: (s) => el("span", {title: fmt.ago(s.timestamp)}, fmt.time(s.timestamp))},
      {label: "State", value: (s) => s.state, render: (s) => statePill(s.state)},
      {label: "Source", value: (s) => (s.source || "").replace(/^SOURCE_/, "") || "–"},
      {label: "Reason", value: (s) => (s.reason || "").replace(/^REASON_/, "") || "–", render: (s) => s.reason ? el("span", {class: "mono", title: s.reason}, s.reason.replace(/^REASON_/, "")) : "–"},
      {label: "Message", value: (s) => s.message || "", render: (s) => s.message || "–"},
      {label: "Health", value: (s) => s.healthy === undefined ? "" : String(s.healthy),
        render: (s) => s.healthy === undefined ? "–" : boolPill(s.healthy, "healthy", "unhealthy")},
    ]});
    history.node.id = "task-history";
    replace(root, crumbs, head,
      el("div", {class: "cols"}, el("div", {}, el("h2", {}, "Task"), info), el("div", {}, el("h2", {}, "Health"), health)),
      el("h2", {}, "Resource usage"), usage,
      el("h2", {}, "Status history"), history.node,
      el("h2", {}, "Output"), output);

    let panel = null, sandboxAsked = false, prevSample = null, lastStats = 0, statsBusy = false;
    const openLog = (agentId, dir, file) => {
      if (panel) panel.stop();
      panel = logPanel(agentId, dir, file, (f) => openLog(agentId, dir, f));
      replace(output, panel.node, el("p", {},
        el("a", {href: sandboxHash(agentId, dir, null, taskId)}, "Browse the whole sandbox"), " (every file the task wrote)."));
    };
    const readUsage = (t) => {
      if (statsBusy || Date.now() - lastStats < 2000) return;
      if (TERMINAL.has(t.state)) {
        replace(usage, el("div", {class: "card muted"}, "The task has ended: its container is gone, so there is no usage to show."));
        return;
      }
      statsBusy = true;
      lastStats = Date.now();
      agentJSON(t.slave_id, ROUTES.statistics).then((stats) => {
        const u = usageOf(stats, t);
        if (!u) { replace(usage, el("div", {class: "card muted"}, "The agent reports no statistics for this task's container yet.")); return; }
        const s = u.statistics || {};
        const rate = cpuRate(prevSample, s);
        prevSample = s;
        const cpuTime = (s.cpus_user_time_secs || 0) + (s.cpus_system_time_secs || 0);
        const limit = s.cpus_limit;
        replace(usage,
          card("CPU", rate === null ? "measuring…" : fmt.num(rate) + (limit ? " of " + fmt.num(limit) : ""),
            `${fmt.num(cpuTime)}s CPU time (user ${fmt.num(s.cpus_user_time_secs)}s, system ${fmt.num(s.cpus_system_time_secs)}s)`,
            rate !== null && limit ? rate / limit : undefined),
          card("Memory", fmt.bytes(s.mem_rss_bytes || 0) + (s.mem_limit_bytes ? " of " + fmt.bytes(s.mem_limit_bytes) : ""),
            "resident set size", s.mem_limit_bytes ? (s.mem_rss_bytes || 0) / s.mem_limit_bytes : undefined),
          card("Processes", fmt.num(s.processes !== undefined ? s.processes : s.threads),
            s.threads !== undefined ? `${s.threads} threads` : null),
          card("Sampled", el("span", {title: fmt.time(s.timestamp)}, new Date(s.timestamp * 1000).toLocaleTimeString()),
            `executor ${u.executor_id}`));
      }, (e) => replace(usage, el("div", {class: "card muted"}, e.message))).finally(() => { statsBusy = false; });
    };
    return {
      destroy: () => { if (panel) panel.stop(); },
      update: (store) => {
        const t = tasksOf(store.state, (x) => x.id === taskId && x.framework_id === fwId)[0];
        if (!t) {
          replace(head, el("h1", {}, taskId), el("div", {class: "subtitle"},
            "This master does not know the task (it may have been removed from its bounded history of completed tasks)."));
          return;
        }
        replace(crumbs, el("a", {href: "#/tasks"}, "Tasks"), " / ", link.framework(fwId, t.framework_name || fwId), " / ", taskId);
        replace(head, el("h1", {}, t.name || t.id, " ", statePill(t.state)), el("div", {class: "subtitle mono"}, t.id));
        const last = (t.statuses || []).length ? t.statuses[t.statuses.length - 1] : null;
        const container = t.container || {};
        replace(info, kv([
          ["State", statePill(t.state)],
          ["Framework", link.framework(fwId, t.framework_name || fwId)],
          ["Agent", t.slave_id ? link.agent(t.slave_id, agentLabel(t.slave_id)) : null],
          ["Executor", t.executor_id || "command executor"],
          ["Role", t.role], ["Resources", fmt.res(t.resources)], ["User", t.user],
          ["Started", started(t) ? fmt.time(started(t)) : null],
          ["Last status", last ? `${fmt.time(last.timestamp)} (${fmt.ago(last.timestamp)})` : null],
          ["Reason", last && last.reason ? last.reason : null],
          ["Message", last && last.message ? last.message : null],
          ["Container", container.type ? container.type + (container.docker ? ` (${container.docker.image})` : "") : null],
          ["Labels", labelsText(t.labels)],
        ]));
        replace(health, kv([["Health", healthPill(t)], ["Check", checkText(t.health_check)],
          ["Last checked", (() => {
            const hs = (t.statuses || []).filter((s) => s.healthy !== undefined);
            return hs.length ? fmt.time(hs[hs.length - 1].timestamp) : null;
          })()]]));
        history.setRows(t.statuses || []);
        if (t.slave_id) readUsage(t);
        if (!sandboxAsked && t.slave_id) {
          sandboxAsked = true;
          if (!agentById(store.state, t.slave_id)) {
            replace(output, el("div", {class: "panel"}, el("div", {class: "empty"}, `Agent ${t.slave_id} is not registered with the master: the output cannot be read.`)));
            return;
          }
          taskDirectory(t.slave_id, fwId, taskId, t.executor_id).then((dir) => {
            if (!dir) { replace(output, el("div", {class: "panel"}, el("div", {class: "empty"}, "The agent has no sandbox for this task (not started yet, or garbage-collected)."))); sandboxAsked = false; return; }
            openLog(t.slave_id, dir, dir + "/stdout");
          }, (e) => { replace(output, el("div", {class: "panel"}, el("div", {class: "empty"}, e.message))); });
        }
      },
    };
  },
};
