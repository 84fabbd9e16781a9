// render.js DOC_DIR: runs the UI's scripts in node over testdata/dom.js and
// prints the text of the reservations page and of one agent's page, built
// from DOC_DIR/state.json and DOC_DIR/slaves.json (what a real master
// wrote). masterJSON and agentJSON are replaced by readers of those files.
"use strict";
const fs = require("fs"), path = require("path"), vm = require("vm");
const dir = process.argv[2], js = path.join(__dirname, "..", "..", "ui", "static", "js");
vm.runInThisContext(fs.readFileSync(path.join(__dirname, "dom.js"), "utf8"));
for (const f of ["util.js", "api.js", "views.js", "reservations.js"]) {
  vm.runInThisContext(fs.readFileSync(path.join(js, f), "utf8"), {filename: f});
}
const state = JSON.parse(fs.readFileSync(path.join(dir, "state.json"), "utf8"));
const slaves = JSON.parse(fs.readFileSync(path.join(dir, "slaves.json"), "utf8"));
const asked = [];
globalThis.__asked = asked; globalThis.__slaves = slaves; globalThis.__state = state;
vm.runInThisContext(`
  masterJSON = async (route, params) => {
    __asked.push(route + JSON.stringify(params || {}));
    if (route !== ROUTES.slaves) throw new Error("unexpected route " + route);
    const id = params && params.slave_id;
    return {slaves: __slaves.slaves.filter((a) => !id || a.id === id)};
  };
  agentJSON = () => Promise.reject(new Error("no agent in this test"));
  showBanner = (m) => { throw new Error("banner: " + m); };
  var store = {state: __state};
`);
(async () => {
  const page = document.createElement("main");
  vm.runInThisContext("reservationsView").mount(page).update({state});
  const agent = document.createElement("main");
  vm.runInThisContext("agentView").mount(agent, [state.slaves[0].id], new URLSearchParams()).update({state});
  await new Promise((r) => setTimeout(r, 10));
  process.stdout.write(JSON.stringify({reservations: text(page), agent: text(agent), asked}));
})().catch((e) => { console.error(e.stack); process.exit(1); });
