// taskfuncs.js: runs the task page's pure functions (static/js/task.js) in
// node on the cases given as JSON on stdin ([{fn, args}]) and prints their
// results as a JSON array, for task_test.go.
"use strict";
const fs = require("fs"), path = require("path"), vm = require("vm");
const js = path.join(__dirname, "..", "..", "ui", "static", "js");
vm.runInThisContext(fs.readFileSync(path.join(__dirname, "dom.js"), "utf8"));
for (const f of ["util.js", "api.js", "views.js", "sandbox.js", "task.js"]) {
  vm.runInThisContext(fs.readFileSync(path.join(js, f), "utf8"), {filename: f});
}
const fns = {cpuRate: vm.runInThisContext("cpuRate"), usageOf: vm.runInThisContext("usageOf"),
  checkText: vm.runInThisContext("checkText"), lastHealth: vm.runInThisContext("lastHealth"),
  labelsText: vm.runInThisContext("labelsText")};
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(cases.map((c) => {
  const v = fns[c.fn](...c.args);
  return v === undefined ? "undefined" : v;
})));
