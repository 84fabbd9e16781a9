// maintenance.js: machines in maintenance (DRAINING with their window and
// the frameworks' answers to inverse offers, DOWN) from
// /master/maintenance/schedule and /master/maintenance/status, and the
// outstanding inverse offers per framework from the operator API's
// GET_FRAMEWORKS. The first half is pure (documents in, rows out) so it can
// be checked without a browser; the view follows.
"use strict";

function machineName(m) {
  if (!m) return "";
  if (m.hostname && m.ip) return `${m.hostname}/${m.ip}`;
  return m.hostname || m.ip || "";
}

// nanosToSecs turns a TimeInfo/DurationInfo's nanoseconds (a number or,
// from a protobuf JSON encoder, a string) into seconds.
function nanosToSecs(x) {
  if (!x || x.nanoseconds === undefined) return null;
  return Number(x.nanoseconds) / 1e9;
}

function durationText(secs) {
  if (secs === null) return "–";
  if (secs % 3600 === 0) return `${secs / 3600}h`;
  if (secs % 60 === 0) return `${secs / 60}m`;
  return `${secs}s`;
}

// maintenanceRows lists every machine of the schedule and every DOWN
// machine: mode, window start and duration (seconds), and the answers to
// inverse offers ({framework_id, status}).
function maintenanceRows(schedule, status) {
  const windows = new Map();
  for (const w of (schedule && schedule.windows) || []) {
    for (const m of w.machine_ids || []) {
      windows.set(machineName(m), {start: nanosToSecs((w.unavailability || {}).start), duration: nanosToSecs((w.unavailability || {}).duration)});
    }
  }
  const rows = [];
  for (const d of (status && status.draining_machines) || []) {
    const name = machineName(d.id);
    const w = windows.get(name) || {start: null, duration: null};
    rows.push({machine: name, mode: "DRAINING", start: w.start, duration: w.duration,
      answers: (d.statuses || []).map((s) => ({framework_id: (s.framework_id || {}).value, status: s.status}))});
  }
  for (const m of (status && status.down_machines) || []) {
    const name = machineName(m);
    const w = windows.get(name) || {start: null, duration: null};
    rows.push({machine: name, mode: "DOWN", start: w.start, duration: w.duration, answers: []});
  }
  return rows.sort((a, b) => a.machine < b.machine ? -1 : a.machine > b.machine ? 1 : 0);
}

// inverseOfferRows lists the outstanding inverse offers of a GET_FRAMEWORKS
// response, one row per framework and agent.
function inverseOfferRows(resp) {
  const rows = [];
  for (const f of ((resp && resp.get_frameworks) || {}).frameworks || []) {
    const info = f.framework_info || {};
    for (const io of f.inverse_offers || []) {
      const u = io.unavailability || {};
      const addr = (io.url && io.url.address) || {};
      rows.push({framework_id: (info.id || {}).value, framework: info.name || "", id: (io.id || {}).value,
        agent_id: (io.agent_id || {}).value, hostname: addr.hostname || "", start: nanosToSecs(u.start), duration: nanosToSecs(u.duration)});
    }
  }
  return rows;
}

// --- view (needs the DOM) ---

const maintenanceView = {
  mount(root) {
    const machines = new DataTable({pageSize: 50,
      empty: "No machine is in maintenance. Schedule one with `mezzo maintenance schedule FILE` or UPDATE_MAINTENANCE_SCHEDULE.",
      columns: [
        {label: "Machine", value: (r) => r.machine, render: (r) => el("span", {class: "mono"}, r.machine)},
        {label: "Mode", value: (r) => r.mode, render: (r) => el("span", {class: r.mode === "DOWN" ? "pill bad" : "pill warn"}, r.mode)},
        {label: "Window start", value: (r) => r.start || 0, render: (r) => fmt.time(r.start)},
        {label: "Duration", value: (r) => r.duration || 0, render: (r) => durationText(r.duration)},
        {label: "Inverse offer answers", value: (r) => r.answers.length, render: (r) => r.answers.length
          ? el("span", {}, ...r.answers.map((a) => el("span", {class: a.status === "ACCEPT" ? "pill ok" : "pill bad"},
            link.framework(a.framework_id), " " + a.status)))
          : "–"},
      ]});
    const offers = new DataTable({pageSize: 50, empty: "No outstanding inverse offer.", columns: [
      {label: "Framework", value: (r) => r.framework || r.framework_id, render: (r) => link.framework(r.framework_id, r.framework || r.framework_id)},
      {label: "Agent", value: (r) => r.hostname || r.agent_id, render: (r) => link.agent(r.agent_id, r.hostname || r.agent_id)},
      {label: "Unavailable from", value: (r) => r.start || 0, render: (r) => fmt.time(r.start)},
      {label: "For", value: (r) => r.duration || 0, render: (r) => durationText(r.duration)},
      {label: "Inverse offer", value: (r) => r.id, render: (r) => el("span", {class: "mono"}, r.id)},
    ]});
    replace(root, el("h1", {}, "Maintenance"),
      el("div", {class: "subtitle"}, "Machines in a window are DRAINING: their offers carry the unavailability and frameworks using them get inverse offers. DOWN machines' agents are shut down until the machine is brought up."),
      el("h2", {}, "Machines"), machines.node,
      el("h2", {}, "Inverse offers by framework"), offers.node);
    return {update: () => {
      Promise.all([masterJSON(ROUTES.maintenanceSchedule), masterJSON(ROUTES.maintenanceStatus)]).then(([s, st]) => {
        machines.setRows(maintenanceRows(s, st));
      }, (e) => showBanner(e.message, true));
      masterPost(ROUTES.operator, {type: "GET_FRAMEWORKS"}).then((resp) => {
        offers.setRows(inverseOfferRows(resp));
      }, (e) => showBanner(e.message, true));
    }};
  },
};
