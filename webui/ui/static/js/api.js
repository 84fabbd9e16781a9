// api.js: every endpoint the UI reads is named in ROUTES (webui.Routes in
// Go mirrors this table and its tests check both against the master's and
// agent's routers). The master is read with fetch from the page's own
// origin; agents, on other ports, through JSONP (?jsonp=callback), which
// mezzo and Mesos agents answer and which needs no CORS headers.
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
  // agent, on the agent's base URL
  agentState: "/slave(1)/state",
  filesBrowse: "/files/browse",
  filesRead: "/files/read",
  filesDownload: "/files/download", // a link the browser follows, not read by script
});

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

// masterJSON reads a master endpoint. The error says what failed, with the
// master's own message ("503 Service Unavailable: No leader elected").
async function masterJSON(route, params) {
  const url = route + query(params);
  let resp;
  try {
    resp = await fetch(url, {headers: {Accept: "application/json"}, cache: "no-store"});
  } catch (e) {
    throw new Error(`master unreachable (GET /${url}): ${e.message}`);
  }
  if (!resp.ok) {
    const body = (await resp.text()).trim().slice(0, 300);
    const err = new Error(`GET /${url}: ${resp.status} ${resp.statusText}${body ? ": " + body : ""}`);
    err.status = resp.status;
    throw err;
  }
  return resp.json();
}

// masterPost makes a v1 operator call (JSON) on the master and returns the
// decoded response.
async function masterPost(route, call) {
  let resp;
  try {
    resp = await fetch(route, {method: "POST", headers: {"Content-Type": "application/json", Accept: "application/json"},
      body: JSON.stringify(call), cache: "no-store"});
  } catch (e) {
    throw new Error(`master unreachable (POST /${route}): ${e.message}`);
  }
  if (!resp.ok) {
    const body = (await resp.text()).trim().slice(0, 300);
    throw new Error(`POST /${route} ${call.type}: ${resp.status} ${resp.statusText}${body ? ": " + body : ""}`);
  }
  return resp.json();
}

// agentBase turns an agent pid "slave(1)@10.0.0.1:5051" into its base URL.
function agentBase(pid) {
  const at = (pid || "").lastIndexOf("@");
  if (at < 0) throw new Error(`agent pid ${JSON.stringify(pid)}: expecting id@host:port`);
  const scheme = location.protocol === "https:" ? "https:" : "http:";
  return `${scheme}//${pid.slice(at + 1)}`;
}

let jsonpSeq = 0;

// agentJSON reads an agent endpoint through JSONP.
function agentJSON(pid, route, params, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    let base;
    try { base = agentBase(pid); } catch (e) { reject(e); return; }
    const cb = "__mezzoJsonp" + (++jsonpSeq);
    const url = base + route + query(Object.assign({}, params, {jsonp: cb}));
    const script = document.createElement("script");
    const done = () => {
      clearTimeout(timer);
      window[cb] = () => {}; // a late answer after a timeout is ignored
      script.remove();
    };
    const timer = setTimeout(() => { done(); reject(new Error(`agent ${base}: no answer to ${route} within ${timeoutMs / 1000}s`)); }, timeoutMs);
    window[cb] = (data) => { done(); resolve(data); };
    script.onerror = () => { done(); reject(new Error(`agent ${base}: cannot read ${route} (agent down, path unknown, or not reachable from this browser)`)); };
    script.src = url;
    document.head.appendChild(script);
  });
}
