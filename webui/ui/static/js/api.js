// api.js: every endpoint the UI reads is named in ROUTES (webui.Routes in
// Go mirrors this table and its tests check both against the master's and
// agent's routers). Everything is read from the page's own origin, the
// master: agents' endpoints through the master's read-only proxy
// (agent/<agent_id>/<endpoint>), so the UI needs to reach nothing else and
// works behind one ingress.
"use strict";

const ROUTES = Object.freeze({
  // master, relative to the page ("/")
  state: "master/state",
  metrics: "metrics/snapshot",
  roles: "master/roles",
  slaves: "master/slaves", // reservations and volumes (the *_full resources)
  explain: "master/allocator/explain",
  maintenanceSchedule: "master/maintenance/schedule",
  maintenanceStatus: "master/maintenance/status",
  operator: "master/api/v1", // v1 operator calls (POST, masterPost)
  redirect: "master/redirect", // a follower sends the browser to the leader
  // agent endpoints, read through the master's proxy (agentURL)
  agentState: "/slave(1)/state",
  filesBrowse: "/files/browse",
  filesRead: "/files/read",
  filesDownload: "/files/download", // a link the browser follows, not read by script
  statistics: "/monitor/statistics",
});

// AGENT_PROXY is the master's prefix for an agent's endpoints.
const AGENT_PROXY = "agent/";

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

// NOT_LEADER marks the error of a request a follower redirected to the
// leader (app.js then sends the browser there).
const NOT_LEADER = "not the leading master";

// getJSON reads a same-origin URL. Redirects are not followed: a follower
// answers 307 to the leader, another origin the page may not read; the
// error is marked notLeader instead. The error says what failed, with the
// server's own message ("503 Service Unavailable: No leader elected").
async function getJSON(url, what) {
  let resp;
  try {
    resp = await fetch(url, {headers: {Accept: "application/json"}, cache: "no-store", redirect: "manual"});
  } catch (e) {
    throw new Error(`${what} unreachable (GET /${url}): ${e.message}`);
  }
  if (resp.type === "opaqueredirect") {
    const err = new Error(`GET /${url}: this is ${NOT_LEADER}`);
    err.notLeader = true;
    throw err;
  }
  if (!resp.ok) {
    const body = (await resp.text()).trim().slice(0, 300);
    const err = new Error(`GET /${url}: ${resp.status} ${resp.statusText}${body ? ": " + body : ""}`);
    err.status = resp.status;
    throw err;
  }
  return resp.json();
}

// masterJSON reads a master endpoint.
function masterJSON(route, params) {
  return getJSON(route + query(params), "master");
}

// masterPost makes a v1 operator call (JSON) on the master and returns the
// decoded response. As getJSON, it does not follow a follower's redirect.
async function masterPost(route, call) {
  let resp;
  try {
    resp = await fetch(route, {method: "POST", headers: {"Content-Type": "application/json", Accept: "application/json"},
      body: JSON.stringify(call), cache: "no-store", redirect: "manual"});
  } catch (e) {
    throw new Error(`master unreachable (POST /${route}): ${e.message}`);
  }
  if (resp.type === "opaqueredirect") {
    const err = new Error(`POST /${route} ${call.type}: this is ${NOT_LEADER}`);
    err.notLeader = true;
    throw err;
  }
  if (!resp.ok) {
    const body = (await resp.text()).trim().slice(0, 300);
    throw new Error(`POST /${route} ${call.type}: ${resp.status} ${resp.statusText}${body ? ": " + body : ""}`);
  }
  return resp.json();
}

// agentURL is an agent endpoint's URL through the master's proxy.
function agentURL(agentId, route, params) {
  return AGENT_PROXY + encodeURIComponent(agentId) + route + query(params);
}

// agentJSON reads an agent endpoint through the master.
function agentJSON(agentId, route, params) {
  return getJSON(agentURL(agentId, route, params), "master");
}
