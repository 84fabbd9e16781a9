// A minimal DOM for running the UI's views in node: elements with
// children, attributes, listeners and text; enough for el/replace and
// DataTable. text(node) flattens what a user would read.
class Node {
  constructor(tag) { this.tagName = tag; this.childNodes = []; this.attributes = {}; this.style = {}; this.listeners = {}; this.hidden = false; this.value = ""; this._text = null; }
  appendChild(c) { this.childNodes.push(c); return c; }
  replaceChildren(...cs) { this.childNodes = cs; }
  setAttribute(k, v) { this.attributes[k] = v; }
  addEventListener(k, f) { this.listeners[k] = f; }
  remove() {}
  set className(v) { this.attributes.class = v; }
  get className() { return this.attributes.class || ""; }
  set textContent(v) { this.childNodes = [new Text(String(v))]; }
  get textContent() { return this.childNodes.map((c) => c.textContent).join(""); }
  querySelector() { return new Node("div"); }
  querySelectorAll() { return []; }
}
class Text extends Node { constructor(s) { super("#text"); this.data = s; } get textContent() { return this.data; } }
globalThis.Node = Node;
globalThis.document = {createElement: (t) => new Node(t), createTextNode: (s) => new Text(s), head: new Node("head"), getElementById: () => new Node("div")};
globalThis.window = globalThis;
globalThis.location = {protocol: "http:", hash: ""};
function text(n) {
  if (n instanceof Text) return n.data;
  const inner = n.childNodes.map(text).join(n.tagName === "tr" ? " | " : " ");
  return ["tr", "h1", "h2", "div"].includes(n.tagName) ? inner + "\n" : inner;
}
globalThis.text = text;
