// explain.js FILE: runs the UI's scripts in node over testdata/dom.js and
// prints, as a JSON list, the text the framework page shows for each
// allocator explanation in FILE (a JSON list of GET /master/allocator/explain
// answers).
"use strict";
const fs = require("fs"), path = require("path"), vm = require("vm");
const js = path.join(__dirname, "..", "..", "ui", "static", "js");
vm.runInThisContext(fs.readFileSync(path.join(__dirname, "dom.js"), "utf8"));
for (const f of ["util.js", "api.js", "views.js"]) {
  vm.runInThisContext(fs.readFileSync(path.join(js, f), "utf8"), {filename: f});
}
const explanations = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const node = vm.runInThisContext("explanationNode");
process.stdout.write(JSON.stringify(explanations.map((ex) => text(node(ex)))));
