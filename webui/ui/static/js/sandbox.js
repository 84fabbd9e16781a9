// sandbox.js: a task's sandbox on its agent: the directory listing
// (/files/browse) and a tail of a file (/files/read) that follows what the
// task writes, all read through the master's agent proxy.
// #/task/<agent>/<framework>/<task> finds the executor's directory through
// the agent's /state and forwards to
// #/sandbox/<agent>?root=<dir>&path=<dir>&file=<dir>/stdout.
"use strict";

function sandboxHash(agentId, dir, file, taskId) {
  const q = {root: dir, path: dir};
  if (file) q.file = file;
  if (taskId) q.task = taskId;
  return "#/sandbox/" + encodeURIComponent(agentId) + query(q);
}

// findDirectory mirrors `mezzo logs`: the executor listing the task, else
// the one whose ID is the task's executor ID or (command executor) its own.
function findDirectory(st, fwId, taskId, executorId) {
  const has = (list) => (list || []).some((t) => t.id === taskId);
  const match = (ex) => has(ex.tasks) || has(ex.queued_tasks) || has(ex.completed_tasks) ||
    (executorId && ex.id === executorId) || ex.id === taskId;
  let completed = "";
  for (const fws of [st.frameworks, st.completed_frameworks]) {
    for (const fw of fws || []) {
      if (fw.id !== fwId) continue;
      for (const ex of fw.executors || []) if (match(ex) && ex.directory) return ex.directory;
      for (const ex of fw.completed_executors || []) if (match(ex) && ex.directory) completed = ex.directory;
    }
  }
  return completed;
}

const taskSandboxView = {
  mount(root, params) {
    const [agentId, fwId, taskId] = params;
    const msg = el("p", {class: "muted"}, `Locating the sandbox of task ${taskId}…`);
    replace(root, el("div", {class: "crumbs"}, link.agent(agentId), " / ", taskId), msg);
    let started = false;
    return {update: (store) => {
      if (started) return;
      started = true;
      const agent = agentById(store.state, agentId);
      if (!agent) { msg.textContent = `Agent ${agentId} is not registered with the master: its sandboxes cannot be read.`; return; }
      const task = tasksOf(store.state, (t) => t.id === taskId && t.framework_id === fwId)[0] || {};
      taskDirectory(agentId, fwId, taskId, task.executor_id).then((dir) => {
        if (!dir) { msg.textContent = `Agent ${agent.hostname} has no sandbox for task ${taskId} (it may have been garbage-collected).`; return; }
        location.replace(sandboxHash(agentId, dir, dir + "/stdout", taskId));
      }, (e) => { msg.textContent = e.message; });
    }};
  },
};

// consumed maps a /files/read string back to file bytes, as the CLI does:
// each U+FFFD stands for one byte that was not UTF-8; up to three trailing
// ones (a character cut by the read) are left for the next read.
function consumed(data) {
  let n = 0, trailing = 0;
  const cuts = [];
  let i = 0;
  for (const ch of data) {
    const cp = ch.codePointAt(0);
    if (cp === 0xFFFD) { n += 1; trailing++; cuts.push(i); }
    else { n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; trailing = 0; cuts.length = 0; }
    i += ch.length;
  }
  const drop = Math.min(trailing, 3);
  if (drop > 0 && drop < n) return [data.slice(0, cuts[cuts.length - drop]), n - drop];
  return [data, n];
}

// taskDirectory finds a task's sandbox folder from its agent's /state.
function taskDirectory(agentId, fwId, taskId, executorId) {
  return agentJSON(agentId, ROUTES.agentState).then((st) => findDirectory(st, fwId, taskId, executorId));
}

const TAIL_BYTES = 64 * 1024;        // what a file view starts with
const MAX_SHOWN = 2 * 1024 * 1024;   // characters kept on screen while following
const FOLLOW_MS = 1000;

const sandboxView = {
  mount(root, params, q) {
    const agentId = params[0];
    const dir = q.get("root") || "";
    const path = q.get("path") || dir;
    const file = q.get("file");
    const taskId = q.get("task");
    const here = (over) => {
      const o = {root: dir, path, file, task: taskId};
      Object.assign(o, over);
      for (const k of Object.keys(o)) if (!o[k]) delete o[k];
      return "#/sandbox/" + encodeURIComponent(agentId) + query(o);
    };
    const crumbs = el("div", {class: "crumbs"});
    const viewer = el("div");
    const listing = new DataTable({pageSize: 100, sort: 0, empty: "Empty folder.", columns: [
      {label: "Name", value: (e) => (e.mode[0] === "d" ? "0" : "1") + base(e.path), render: (e) => e.mode[0] === "d"
        ? el("a", {href: here({path: e.path, file: null})}, base(e.path) + "/")
        : el("a", {href: here({file: e.path})}, base(e.path))},
      {label: "Size", num: true, value: (e) => e.size, render: (e) => e.mode[0] === "d" ? "–" : fmt.bytes(e.size)},
      {label: "Modified", value: (e) => e.mtime, render: (e) => el("span", {title: fmt.time(e.mtime)}, fmt.ago(e.mtime))},
      {label: "Mode", value: (e) => e.mode, render: (e) => el("span", {class: "mono"}, e.mode)},
      {label: "Owner", value: (e) => e.uid},
    ]});
    replace(root, crumbs, el("h1", {}, taskId ? `Sandbox of task ${taskId}` : "Sandbox"),
      el("div", {class: "subtitle mono"}, dir), viewer, el("h2", {}, "Files"), listing.node);
    let timer = null, agent = null, started = false;
    const stop = () => { if (timer) timer.stop(); timer = null; };
    return {
      destroy: stop,
      update: (store) => {
        if (started) return;
        started = true;
        agent = agentById(store.state, agentId);
        replace(crumbs, link.agent(agentId, agent ? hostPort(agent) : agentId), " / ",
          relPath(dir, path).map((seg, i, all) => [i ? " / " : "",
            el("a", {href: here({path: joinDir(dir, all.slice(1, i + 1)), file: null})}, seg)]));
        if (!agent) { replace(viewer, el("p", {class: "muted"}, `Agent ${agentId} is not registered with the master.`)); return; }
        agentJSON(agentId, ROUTES.filesBrowse, {path}).then((entries) => listing.setRows(entries),
          (e) => replace(listing.tbody, el("tr", {}, el("td", {class: "empty", colspan: 5}, e.message))));
        if (file) {
          const panel = logPanel(agentId, dir, file, (f) => { location.hash = here({file: f}); });
          replace(viewer, panel.node);
          timer = panel;
        }
      },
    };
  },
};

function base(p) { return p.slice(p.lastIndexOf("/") + 1); }

// relPath lists breadcrumb segments from the sandbox root to path.
function relPath(root, path) {
  const rest = path.startsWith(root) ? path.slice(root.length).split("/").filter(Boolean) : [];
  return ["sandbox"].concat(rest);
}

function joinDir(root, segs) { return segs.length ? root + "/" + segs.join("/") : root; }

// logPanel shows the tail of a file in dir (stdout or stderr, with tabs to
// switch: onTab(file)) and follows what is appended while "follow" is
// checked. It returns {node, stop}; stop ends the following.
function logPanel(agentId, dir, file, onTab) {
  const pre = el("pre", {class: "log"}, "Reading…");
  const follow = el("input", {type: "checkbox", checked: true});
  const info = el("span", {class: "count"});
  const tabs = el("div", {class: "tabs"}, ["stdout", "stderr"].map((name) => el("button", {
    class: file === dir + "/" + name ? "active" : null, onclick: () => onTab(dir + "/" + name)}, name)));
  const download = el("a", {href: agentURL(agentId, ROUTES.filesDownload, {path: file})}, "download");
  const node = el("div", {class: "panel"},
    el("div", {class: "toolbar"}, tabs, el("span", {class: "mono", title: file}, base(file)), el("label", {}, follow, " follow"), download, info), pre);
  let offset = 0, busy = true, shown = 0, timer = null; // busy until the first read is shown
  const stop = () => { if (timer) clearInterval(timer); timer = null; };
  const show = (text, fresh) => {
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
    if (fresh) pre.textContent = "";
    if (text) pre.appendChild(document.createTextNode(text));
    shown += text.length;
    if (shown > MAX_SHOWN) { pre.textContent = pre.textContent.slice(-MAX_SHOWN / 2); shown = pre.textContent.length; }
    if (atBottom || fresh) pre.scrollTop = pre.scrollHeight;
  };
  // readOn reads from offset to the end of the file, chunk by chunk.
  const readOn = async (fresh) => {
    let text = "";
    for (let i = 0; i < 64; i++) {
      const r = await agentJSON(agentId, ROUTES.filesRead, {path: file, offset, length: TAIL_BYTES});
      if (!r.data) {
        if (r.offset < offset) { offset = 0; text = "[file truncated; reading from the start]\n"; continue; }
        break;
      }
      const [t, n] = consumed(r.data);
      text += t;
      offset += n;
    }
    show(text, fresh);
    info.textContent = fmt.bytes(offset);
  };
  agentJSON(agentId, ROUTES.filesRead, {path: file, offset: -1}).then(async (r) => {
    const size = r.offset;
    offset = Math.max(0, size - TAIL_BYTES);
    await readOn(true);
    if (size > TAIL_BYTES) pre.insertBefore(document.createTextNode(`[… ${fmt.bytes(size - TAIL_BYTES)} earlier; download for the whole file]\n`), pre.firstChild);
  }).catch((e) => { pre.textContent = e.message; stop(); }).finally(() => { busy = false; });
  timer = setInterval(() => {
    if (!follow.checked || busy || document.hidden) return;
    busy = true;
    readOn(false).catch((e) => { info.textContent = e.message; }).finally(() => { busy = false; });
  }, FOLLOW_MS);
  return {node, stop};
}
