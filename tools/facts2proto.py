#!/usr/bin/env python3
"""Writes mezzo's .proto files from the Mesos v1 wire-format fact tables.

The tables in shared/reference/proto-facts.md list every message with its
field numbers, labels, types and explicit defaults, and every enum with its
values. Those numbers and names are the wire contract with unmodified Mesos
clients, so we transcribe them mechanically rather than by hand: a typo in a
field number would silently break protobuf compatibility.

Usage: tools/facts2proto.py FACTS OUTDIR [EXTRA_FACTS...]
e.g. `tools/facts2proto.py ../shared/reference/proto-facts.md api/proto
api/proto/facts-extra.md` (`make protos`). The output is committed; `make
generate` turns it into Go.

Several facts files are merged in order. proto-facts.md only references some
nested messages without tabulating them; a later file (api/proto/facts-extra.md)
supplies those tables, plus messages the first file never mentions. A message
table or enum defined twice is an error: a silent override could change a
field number. Types still referenced but tabulated nowhere become empty
placeholder messages, listed on stderr ("placeholder: ...").
"""
import re
import sys
from collections import OrderedDict

# Package prefix in the tables -> (proto package, file, go package).
PACKAGES = OrderedDict([
    ("", ("mesos.v1", "mesos/v1/mesos.proto", "mezzo/api/mesos")),
    ("scheduler", ("mesos.v1.scheduler", "mesos/v1/scheduler/scheduler.proto", "mezzo/api/schedulerpb")),
    ("executor", ("mesos.v1.executor", "mesos/v1/executor/executor.proto", "mezzo/api/executorpb")),
    ("master", ("mesos.v1.master", "mesos/v1/master/master.proto", "mezzo/api/masterpb")),
    ("agent", ("mesos.v1.agent", "mesos/v1/agent/agent.proto", "mezzo/api/agentpb")),
    ("maintenance", ("mesos.v1.maintenance", "mesos/v1/maintenance/maintenance.proto", "mezzo/api/maintenancepb")),
    ("quota", ("mesos.v1.quota", "mesos/v1/quota/quota.proto", "mezzo/api/quotapb")),
    ("allocator", ("mesos.v1.allocator", "mesos/v1/allocator/allocator.proto", "mezzo/api/allocatorpb")),
])
SCALARS = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32",
           "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64", "bool",
           "string", "bytes"}


def split(name):
    """'scheduler.Call.Subscribe' -> ('scheduler', ['Call', 'Subscribe'])."""
    head, _, rest = name.partition(".")
    if head in PACKAGES and head and rest:
        return head, rest.split(".")
    return "", name.split(".")


class Node:
    def __init__(self, name):
        self.name = name
        self.fields = None  # None = only a namespace (enum holder) so far
        self.enums = OrderedDict()
        self.children = OrderedDict()


def main(srcs, out):
    roots = {p: OrderedDict() for p in PACKAGES}

    def node(pkg, path):
        level = roots[pkg]
        n = None
        for part in path:
            if part not in level:
                level[part] = Node(part)
            n = level[part]
            level = n.children
        return n

    # Where each message table / enum was first defined: a second definition
    # (in the same or a later file) is rejected rather than merged.
    seen = {}

    def define(kind, name, where):
        if (kind, name) in seen:
            sys.exit("facts2proto: %s %s defined at %s and again at %s"
                     % (kind, name, seen[(kind, name)], where))
        seen[(kind, name)] = where

    for src in srcs:
        cur = None
        text = open(src, encoding="utf-8").read()
        for lineno, line in enumerate(text.splitlines(), 1):
            where = "%s:%d" % (src, lineno)
            m = re.match(r"^#### (\+?)(\S+)\s*$", line)
            if m:
                pkg, path = split(m.group(2))
                # "#### +Name" adds fields to a message an earlier table
                # defined (mezzo's extensions); anything else defines one.
                if not m.group(1):
                    define("message", "%s %s" % (pkg or "mesos", ".".join(path)), where)
                cur = node(pkg, path)
                cur.fields = cur.fields or []
                cur.pkg = pkg
                continue
            m = re.match(r"^enum \*\*(\S+)\*\*: (.*)$", line)
            if m:
                pkg, path = split(m.group(1))
                define("enum", "%s %s" % (pkg or "mesos", ".".join(path)), where)
                values = [v.strip().split("=") for v in m.group(2).split(",")]
                parent = node(pkg, path[:-1]) if len(path) > 1 else None
                if parent is None:
                    roots[pkg]["enum " + path[0]] = ("enum", path[0], values)
                else:
                    parent.enums[path[-1]] = values
                continue
            if line.startswith("## "):
                cur = None  # a new section: rows below belong to no table
                continue
            m = re.match(r"^\| (\d+) \| ([^|]+)\| (\w+) \| ([^|]+)\|([^|]*)\|", line)
            if m and cur is not None:
                num, name, label, typ, default = (x.strip() for x in m.groups())
                deprecated = name.endswith(" DEPRECATED")
                name = name.replace(" DEPRECATED", "")
                oneof = re.search(r" \(oneof (\w+)\)", name)
                name = re.sub(r" \(oneof \w+\)", "", name)
                cur.fields.append((int(num), name, label, typ, default, deprecated,
                                   oneof.group(1) if oneof else None))

    defined = set()

    def collect(pkg, level, prefix):
        for key, n in level.items():
            if isinstance(n, tuple):
                defined.add((pkg, n[1]))
                continue
            full = prefix + [n.name]
            defined.add((pkg, ".".join(full)))
            for e in n.enums:
                defined.add((pkg, ".".join(full + [e])))
            collect(pkg, n.children, full)

    for pkg, level in roots.items():
        collect(pkg, level, [])

    missing = set()

    def ref(typ, from_pkg):
        """A table type to a proto type reference, fully qualified."""
        if typ.startswith("enum "):
            typ = typ[5:]
        if typ in SCALARS:
            return typ
        if typ.startswith("google.protobuf."):
            return "." + typ
        m = re.match(r"map<(\w+),(\S+)>", typ)
        if m:
            return "map<%s, %s>" % (m.group(1), ref(m.group(2), from_pkg))
        pkg, path = split(typ)
        if (pkg, ".".join(path)) not in defined:
            missing.add((pkg, ".".join(path)))
        return "." + PACKAGES[pkg][0] + "." + ".".join(path)

    # Types referenced but not tabulated (the agent API table lists only its
    # top-level messages) become empty messages: they still round-trip on the
    # wire as unknown fields, and a later change can fill them in.
    def scan(level):
        for n in level.values():
            if isinstance(n, tuple):
                continue
            for f in n.fields or []:
                ref(f[3], n.pkg)
            scan(n.children)

    for pkg, level in roots.items():
        scan(level)
    for pkg, dotted in sorted(missing):
        n = node(pkg, dotted.split("."))
        n.fields = n.fields or []
        n.pkg = pkg
        n.placeholder = True

    def render_default(typ, default):
        if default == "":
            return None
        if typ == "string":
            return '"%s"' % default
        return default

    def emit(n, indent, out_lines):
        pad = "  " * indent
        if getattr(n, "placeholder", False):
            out_lines.append(pad + "// Not tabulated in the reference; carried as unknown fields.")
        out_lines.append(pad + "message %s {" % n.name)
        for ename, values in n.enums.items():
            out_lines.append(pad + "  enum %s {" % ename)
            for k, v in values:
                out_lines.append(pad + "    %s = %s;" % (k.strip(), v.strip()))
            out_lines.append(pad + "  }")
        for child in n.children.values():
            emit(child, indent + 1, out_lines)
        open_oneof = None
        for num, name, label, typ, default, deprecated, oneof in n.fields or []:
            if oneof != open_oneof:
                if open_oneof:
                    out_lines.append(pad + "  }")
                if oneof:
                    out_lines.append(pad + "  oneof %s {" % oneof)
                open_oneof = oneof
            if oneof:
                out_lines.append(pad + "    %s %s = %d;" % (ref(typ, n.pkg), name, num))
                continue
            t = ref(typ, n.pkg)
            opts = []
            d = render_default(typ.replace("enum ", ""), default)
            if d is not None:
                opts.append("default = %s" % d)
            if deprecated:
                opts.append("deprecated = true")
            o = " [%s]" % ", ".join(opts) if opts else ""
            if label == "map":
                out_lines.append(pad + "  %s %s = %d%s;" % (t, name, num, o))
            else:
                out_lines.append(pad + "  %s %s %s = %d%s;" % (label, t, name, num, o))
        if open_oneof:
            out_lines.append(pad + "  }")
        out_lines.append(pad + "}")

    import os
    # Named by basename so the header does not depend on the caller's cwd.
    sources = " + ".join(os.path.basename(s) for s in srcs)
    for pkg, (proto_pkg, path, go_pkg) in PACKAGES.items():
        level = roots[pkg]
        if not level:
            continue
        body = []
        imports = set()
        text_refs = []

        def deps(level):
            for n in level.values():
                if isinstance(n, tuple):
                    continue
                for f in n.fields or []:
                    if f[3] == "google.protobuf.Duration":
                        imports.add("google/protobuf/duration.proto")
                    for m in re.finditer(r"\.(mesos\.v1(?:\.(\w+))?)\.", ref(f[3], pkg)):
                        other = m.group(2) if m.group(2) in PACKAGES else ""
                        if other != pkg:
                            imports.add(PACKAGES[other][1])
                deps(n.children)

        deps(level)
        for key, n in level.items():
            if isinstance(n, tuple):
                _, name, values = n
                body.append("enum %s {" % name)
                for k, v in values:
                    body.append("  %s = %s;" % (k.strip(), v.strip()))
                body.append("}")
            else:
                emit(n, 0, body)
            body.append("")
        head = [
            "// Code generated by tools/facts2proto.py from %s. DO NOT EDIT." % sources,
            "// Field names and numbers are Mesos v1's wire contract; see docs/compatibility.md.",
            "",
            'syntax = "proto2";',
            "",
            "package %s;" % proto_pkg,
            "",
        ]
        head += ['import "%s";' % i for i in sorted(imports)]
        if imports:
            head.append("")
        head += ['option go_package = "%s";' % go_pkg, ""]
        dest = os.path.join(out, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write("\n".join(head + body).rstrip() + "\n")
    for pkg, dotted in sorted(missing):
        print("placeholder: %s %s" % (pkg or "mesos", dotted), file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: facts2proto.py FACTS OUTDIR [EXTRA_FACTS...]")
    main([sys.argv[1]] + sys.argv[3:], sys.argv[2])
