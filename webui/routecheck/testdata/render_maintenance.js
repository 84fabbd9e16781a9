// render_maintenance.js DOC_DIR: runs the UI's scripts in node over
// testdata/dom.js and prints the text of the maintenance page built from
// DOC_DIR/schedule.json, status.json and frameworks.json (what a real
// master wrote). masterJSON and masterPost are replaced by readers of
// those files.
"use strict";
const fs = require("fs"), path = require("path"), vm = require("vm");
const dir = process.argv[2], js = path.join(__dirname, "..", "..", "ui", "static", "js");
vm.runInThisContext(fs.readFileSync(path.join(__dirname, "dom.js"), "utf8"));
for (const f of ["util.js", "api.js", "views.js", "maintenance.js"]) {
  vm.runInThisContext(fs.readFileSync(path.join(js, f), "utf8"), {filename: f});
}
const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
globalThis.__docs = {schedule: read("schedule.json"), status: read("status.json"), frameworks: read("frameworks.json")};
globalThis.__asked = [];
vm.runInThisContext(`
  masterJSON = async (route) => {
    __asked.push("GET " + route);
    if (route === ROUTES.maintenanceSchedule) return __docs.schedule;
    if (route === ROUTES.maintenanceStatus) return __docs.status;
    throw new Error("unexpected route " + route);
  };
  masterPost = async (route, call) => {
    __asked.push("POST " + route + " " + call.type);
    if (route !== ROUTES.operator || call.type !== "GET_FRAMEWORKS") throw new Error("unexpected call " + route);
    return __docs.frameworks;
  };
  showBanner = (m) => { throw new Error("banner: " + m); };
`);
(async () => {
  const page = document.createElement("main");
  vm.runInThisContext("maintenanceView").mount(page).update({});
  await new Promise((r) => setTimeout(r, 10));
  process.stdout.write(JSON.stringify({page: text(page), asked: globalThis.__asked}));
})().catch((e) => { console.error(e.stack); process.exit(1); });
