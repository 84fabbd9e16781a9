// reservations.js: reservations and persistent volumes, per agent and per
// role, read from /master/slaves (whose *_full fields carry the complete
// Resource objects: reservations with principal and labels, volumes with
// their persistence and container path). The first half is pure (data in,
// rows out) so it can be checked without a browser; the views follow.
"use strict";

// topReservation is a resource's most refined reservation (post-refinement
// "reservations", or the pre-refinement "role" + "reservation").
function topReservation(r) {
  const rs = r.reservations || [];
  if (rs.length) return rs[rs.length - 1];
  if (r.role && r.role !== "*") return Object.assign({type: "STATIC", role: r.role}, r.reservation || {});
  return null;
}

function labelsText(labels) {
  return ((labels && labels.labels) || []).map((l) => l.value === undefined ? l.key : `${l.key}=${l.value}`).join(", ");
}

// addAmount adds a resource's quantity to a summary object as Mesos's
// summaries hold it: scalars summed, ranges and sets listed.
function addAmount(sum, r) {
  if (r.scalar) sum[r.name] = Math.round(((sum[r.name] || 0) + r.scalar.value) * 1000) / 1000;
  else if (r.ranges) {
    const text = (r.ranges.range || []).map((x) => `${x.begin}-${x.end}`).join(", ");
    sum[r.name] = sum[r.name] ? sum[r.name].replace(/\]$/, ", " + text + "]") : `[${text}]`;
  } else if (r.set) sum[r.name] = "{" + (r.set.item || []).join(", ") + "}";
}

function persistenceOf(r) {
  return r.disk && r.disk.persistence && r.disk.persistence.id ? r.disk.persistence : null;
}

// reservationRows lists each agent's reservations, one row per agent, role
// and reservation (type, principal, labels), with the reserved quantities.
function reservationRows(slaves) {
  const rows = [];
  for (const a of slaves || []) {
    const byKey = new Map();
    for (const role of Object.keys(a.reserved_resources_full || {}).sort()) {
      for (const r of a.reserved_resources_full[role] || []) {
        const res = topReservation(r) || {role};
        const type = (res.type || "DYNAMIC").toLowerCase();
        const principal = res.principal || "";
        const labels = labelsText(res.labels);
        const key = JSON.stringify([role, type, principal, labels]);
        if (!byKey.has(key)) {
          byKey.set(key, {agent_id: a.id, hostname: a.hostname, port: a.port, role, type, principal, labels, resources: {}, volumes: 0});
        }
        const row = byKey.get(key);
        addAmount(row.resources, r);
        if (persistenceOf(r)) row.volumes++;
      }
    }
    rows.push(...byKey.values());
  }
  return rows;
}

// roleReservations sums the reservations per role over all agents.
function roleReservations(slaves) {
  const byRole = new Map();
  for (const row of reservationRows(slaves)) {
    if (!byRole.has(row.role)) byRole.set(row.role, {role: row.role, resources: {}, agents: new Set(), principals: new Set(), volumes: 0});
    const t = byRole.get(row.role);
    for (const [k, v] of Object.entries(row.resources)) {
      if (typeof v === "number") t.resources[k] = Math.round(((t.resources[k] || 0) + v) * 1000) / 1000;
    }
    t.agents.add(row.agent_id);
    if (row.principal) t.principals.add(row.principal);
    t.volumes += row.volumes;
  }
  return [...byRole.values()].sort((a, b) => a.role < b.role ? -1 : 1).map((t) => ({
    role: t.role, resources: t.resources, agents: t.agents.size, principals: [...t.principals].sort(), volumes: t.volumes}));
}

// volumeRows lists the persistent volumes of every agent; in_use says
// whether a task or executor holds the volume (the agent's used resources
// name it).
function volumeRows(slaves) {
  const rows = [];
  for (const a of slaves || []) {
    const used = new Set();
    for (const r of a.used_resources_full || []) {
      const p = persistenceOf(r);
      const res = topReservation(r);
      if (p && res) used.add(JSON.stringify([res.role, p.id]));
    }
    for (const role of Object.keys(a.reserved_resources_full || {}).sort()) {
      for (const r of a.reserved_resources_full[role] || []) {
        const p = persistenceOf(r);
        if (!p) continue;
        const v = (r.disk && r.disk.volume) || {};
        rows.push({agent_id: a.id, hostname: a.hostname, port: a.port, role, id: p.id, size: r.scalar ? r.scalar.value : 0,
          path: v.container_path || "", mode: v.mode || "RW", principal: p.principal || "", shared: !!r.shared,
          source: r.disk.source ? String(r.disk.source.type || "").toLowerCase() : "", in_use: used.has(JSON.stringify([role, p.id]))});
      }
    }
  }
  return rows;
}

// --- views (need the DOM) ---

function agentCell(r) {
  return link.agent(r.agent_id, r.hostname ? (r.port ? `${r.hostname}:${r.port}` : r.hostname) : r.agent_id);
}

function reservationTable(withAgent) {
  const cols = [
    {label: "Role", value: (r) => r.role, render: (r) => el("strong", {}, r.role)},
    {label: "Reserved", value: (r) => fmt.res(r.resources)},
    {label: "Type", value: (r) => r.type},
    {label: "Principal", value: (r) => r.principal || "–"},
    {label: "Labels", value: (r) => r.labels || "–"},
    {label: "Volumes", num: true, value: (r) => r.volumes},
  ];
  if (withAgent) cols.unshift({label: "Agent", value: (r) => r.hostname || r.agent_id, render: agentCell});
  return new DataTable({pageSize: 50, columns: cols,
    empty: "No reservations. Reserve with `mezzo reserve --agent=ID 'cpus(ROLE):1'` or the operator API's RESERVE_RESOURCES."});
}

function volumeTable(withAgent) {
  const cols = [
    {label: "Persistence ID", value: (r) => r.id, render: (r) => el("span", {class: "mono"}, r.id)},
    {label: "Role", value: (r) => r.role},
    {label: "Size", num: true, value: (r) => r.size, render: (r) => fmt.mem(r.size)},
    {label: "Container path", value: (r) => r.path, render: (r) => el("span", {class: "mono"}, r.path + (r.mode === "RO" ? " (read-only)" : ""))},
    {label: "Principal", value: (r) => r.principal || "–"},
    {label: "In use", value: (r) => r.in_use, render: (r) => r.in_use ? el("span", {class: "pill ok"}, "in use") : el("span", {class: "pill"}, "idle")},
    {label: "Shared", value: (r) => r.shared, render: (r) => r.shared ? "yes" : "no"},
  ];
  if (withAgent) cols.unshift({label: "Agent", value: (r) => r.hostname || r.agent_id, render: agentCell});
  return new DataTable({pageSize: 50, columns: cols,
    empty: "No persistent volumes. Create one on reserved disk with `mezzo volumes create` or CREATE_VOLUMES."});
}

const reservationsView = {
  mount(root) {
    const roles = new DataTable({pageSize: 50, empty: "No role holds reservations.", columns: [
      {label: "Role", value: (r) => r.role, render: (r) => el("strong", {}, r.role)},
      {label: "Reserved", value: (r) => fmt.res(r.resources)},
      {label: "Agents", num: true, value: (r) => r.agents},
      {label: "Principals", value: (r) => r.principals.join(", ") || "–"},
      {label: "Volumes", num: true, value: (r) => r.volumes},
    ]});
    const byAgent = reservationTable(true);
    const volumes = volumeTable(true);
    replace(root, el("h1", {}, "Reservations and volumes"),
      el("div", {class: "subtitle"}, "Resources reserved for a role are offered only to that role and its sub-roles; persistent volumes live on reserved disk and outlive their tasks."),
      el("h2", {}, "By role"), roles.node,
      el("h2", {}, "By agent"), byAgent.node,
      el("h2", {}, "Persistent volumes"), volumes.node);
    return {update: () => {
      masterJSON(ROUTES.slaves).then((doc) => {
        roles.setRows(roleReservations(doc.slaves));
        byAgent.setRows(reservationRows(doc.slaves));
        volumes.setRows(volumeRows(doc.slaves));
      }, (e) => showBanner(e.message, true));
    }};
  },
};

// agentReservations fills an agent page's section from /master/slaves.
function agentReservations(id, reservationsNode, volumesNode) {
  const res = reservationTable(false), vols = volumeTable(false);
  replace(reservationsNode, res.node);
  replace(volumesNode, vols.node);
  return () => masterJSON(ROUTES.slaves, {slave_id: id}).then((doc) => {
    res.setRows(reservationRows(doc.slaves));
    vols.setRows(volumeRows(doc.slaves));
  }, (e) => showBanner(e.message, true));
}
