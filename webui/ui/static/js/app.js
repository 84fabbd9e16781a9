// app.js: the router (#/path?query), the refresh loop that re-reads
// /master/state and /metrics/snapshot every few seconds while the page is
// visible, the banner for errors, and the move to the leading master when
// this one does not lead (as Mesos's UI, through /master/redirect).
"use strict";

const ROUTE_TABLE = [
  [/^\/?$/, overviewView, "overview"],
  [/^\/frameworks$/, frameworksView, "frameworks"],
  [/^\/frameworks\/([^/]+)$/, frameworkView, "frameworks"],
  [/^\/agents$/, agentsView, "agents"],
  [/^\/agents\/([^/]+)$/, agentView, "agents"],
  [/^\/tasks$/, tasksView, "tasks"],
  [/^\/tasks\/([^/]+)\/([^/]+)$/, taskView, "tasks"],
  [/^\/roles$/, rolesView, "roles"],
  [/^\/reservations$/, reservationsView, "reservations"],
  [/^\/maintenance$/, maintenanceView, "maintenance"],
  [/^\/task\/([^/]+)\/([^/]+)\/([^/]+)$/, taskSandboxView, "tasks"],
  [/^\/sandbox\/([^/]+)$/, sandboxView, "tasks"],
];

const REFRESH_MS = 5000;
const store = {state: null, metrics: null};
let current = null;

function showBanner(text, isError) {
  const b = document.getElementById("banner");
  if (!text) { b.hidden = true; return; }
  b.hidden = false;
  b.className = isError ? "banner error" : "banner";
  replace(b, text);
}

function route() {
  if (current && current.destroy) current.destroy();
  const hash = location.hash.replace(/^#/, "") || "/";
  const qi = hash.indexOf("?");
  const path = qi < 0 ? hash : hash.slice(0, qi);
  const q = new URLSearchParams(qi < 0 ? "" : hash.slice(qi + 1));
  const main = document.getElementById("main");
  for (const [re, view, nav] of ROUTE_TABLE) {
    const m = path.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.route === nav);
    current = view.mount(main, m.slice(1).map(decodeURIComponent), q);
    window.scrollTo(0, 0);
    if (store.state) current.update(store);
    return;
  }
  current = null;
  replace(main, el("h1", {}, "Not found"), el("p", {}, "No page at ", el("code", {}, "#" + hash), ". ", el("a", {href: "#/"}, "Back to the overview.")));
}

let refreshing = false;
let redirecting = false;

// toLeader sends the browser to the leading master, keeping the page
// (#/...): /master/redirect answers 307 to the leader's address and the
// browser carries the fragment over.
function toLeader() {
  if (redirecting) return;
  redirecting = true;
  showBanner("This master is not the leader; opening the leading master…", false);
  location.replace(ROUTES.redirect + location.hash);
}

async function refresh() {
  if (refreshing) return;
  refreshing = true;
  try {
    const [state, metrics] = await Promise.all([masterJSON(ROUTES.state), masterJSON(ROUTES.metrics).catch(() => null)]);
    store.state = state;
    store.metrics = metrics;
    const leader = state.leader_info ? `${state.leader_info.hostname}:${state.leader_info.port}` : "";
    document.getElementById("leader").textContent = leader ? "leader " + leader : "no leader elected";
    if (state.leader && state.pid !== state.leader) {
      // A master that serves its own (empty) view instead of redirecting.
      toLeader();
      return;
    }
    showBanner(null);
    document.getElementById("footer").textContent = `mezzo ${state.version} · read ${new Date().toLocaleTimeString()}`;
    if (current) current.update(store);
  } catch (e) {
    if (e.notLeader) { toLeader(); return; }
    showBanner(`Cannot read the master: ${e.message}. Showing the last data read.`, true);
  } finally {
    refreshing = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  route();
  refresh();
  setInterval(() => {
    if (!document.hidden && document.getElementById("autorefresh").checked) refresh();
  }, REFRESH_MS);
});
