"""Builds the Revit API fact table (hosts/revit/double/api/) from stubs that
a stub generator wrote by reflection of RevitAPI.dll and RevitAPIUI.dll.

The stubs are not kept in the repository; only facts taken from them are:
per class its namespace, bases and public constructor arities, and per member
its kind (method, property, field: enum values, static fields and events),
whether it is static, the parameter counts of its overloads and whether a
property can be set, written as one short code a member:

    m0,2   an instance method whose overloads take 0 or 2 parameters
    M2     a static method (2 parameters)
    m1;M3  a name with an instance overload (1 parameter) and a static one (3)
    p      a read-only property        P   a property that can be set
    f      a field: an enum value, a static field or property, an event

Usage:

    python3 api_table.py --stubs DIR --repo OWNER/NAME --commit SHA --out FILE

DIR is the stubs' folder holding Autodesk/Revit (the generator's minimal form,
one space of indentation per level, one file per class or per namespace).
"""
import argparse
import json
import os
import re
import sys

# The namespaces the double exports, and Creation (Document.Create's class).
NAMESPACES = (
    "Autodesk.Revit.ApplicationServices",
    "Autodesk.Revit.Creation",
    "Autodesk.Revit.DB",
    "Autodesk.Revit.DB.Architecture",
    "Autodesk.Revit.DB.Events",
    "Autodesk.Revit.DB.Structure",
    "Autodesk.Revit.Exceptions",
    "Autodesk.Revit.UI",
    "Autodesk.Revit.UI.Events",
    "Autodesk.Revit.UI.Selection",
)

CLASS = re.compile(r"^class (\w+)(?:\((.*)\))?:")
DEF = re.compile(r"^ def (\w+)\(")
ATTR = re.compile(r"^ (\w+)=(property\(|None$)")
VERSION = re.compile(r"# from (RevitAPI\w*),\s*Version=([\d.]+)")


def namespace_of(rel):
    """Autodesk/Revit/DB/__init___parts/XYZ.py -> Autodesk.Revit.DB;
    Autodesk/Revit/DB/Events.py -> Autodesk.Revit.DB.Events."""
    parts = rel[:-3].split("/")
    if parts[-2].endswith("_parts"):
        parts = parts[:-1]
        parts[-1] = parts[-1][:-len("_parts")]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def split_params(text):
    """Top-level comma split of a signature's parameter list."""
    depth, cur, out = 0, "", []
    for ch in text:
        if ch in "[(<":
            depth += 1
        elif ch in "])>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [p.strip() for p in out]


def arities(name, doc_lines):
    """Parameter counts of the overloads a docstring lists
    ("Name(self: T,a: A) -> R"), self not counted: (instance counts, static
    counts), an overload being an instance method when its first parameter
    is self."""
    sig = re.compile(r"^\s+" + re.escape(name) + r"\((.*)\)(\s*->.*)?$")
    inst, static = set(), set()
    for line in doc_lines:
        m = sig.match(line.replace('"""', " ").rstrip())
        if not m:
            continue
        params = split_params(m.group(1))
        if params and params[0].startswith("cls:"):
            params = params[1:]
        if params and params[0].startswith("self:"):
            inst.add(len(params) - 1)
        else:
            static.add(len(params))
    return sorted(inst), sorted(static)


def method_code(inst, static, decorated_static):
    """m1,2 for instance overloads, M3 for static ones, m1;M3 for a name
    with both."""
    if not inst and not static:
        return "M" if decorated_static else "m"
    groups = []
    if inst:
        groups.append("m" + ",".join(str(c) for c in inst))
    if static:
        groups.append("M" + ",".join(str(c) for c in static))
    return ";".join(groups)


def parse_file(path, ns, table, versions):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    cls = None
    i = 0
    static_next = False
    while i < len(lines):
        line = lines[i]
        m = VERSION.match(line)
        if m:
            versions[m.group(1)] = m.group(2)
        m = CLASS.match(line)
        if m:
            bases = [b.strip() for b in (m.group(2) or "").split(",") if b.strip() and b.strip() != "object"]
            cls = {"ns": ns, "bases": bases, "ctors": [], "members": {}}
            table[ns + "." + m.group(1)] = cls
            i += 1
            continue
        if cls is None or (line and not line.startswith(" ")):
            cls = None if line and not line.startswith(" ") and not line.startswith("#") else cls
            i += 1
            continue
        if line.strip() == "@staticmethod":
            static_next = True
            i += 1
            continue
        m = DEF.match(line)
        if m:
            name = m.group(1)
            doc = []
            i += 1
            while i < len(lines) and not lines[i].startswith(" def ") and lines[i].strip() != "pass":
                doc.append(lines[i])
                i += 1
            if name == "__new__":
                inst, static = arities("__new__", doc)
                cls["ctors"] = sorted(set(inst) | set(static))
            elif not name.startswith("__"):
                inst, static = arities(name, doc)
                if name == "Dispose" and "IDisposable" in cls["bases"] and 0 not in inst:
                    inst = [0] + inst  # IDisposable.Dispose(), beside the protected Dispose(bool)
                cls["members"][name] = method_code(inst, static, static_next)
            static_next = False
            continue
        m = ATTR.match(line)
        if m:
            name = m.group(1)
            if m.group(2) == "None":
                if name != "value__":
                    cls["members"][name] = "f"
                i += 1
                continue
            doc = []
            i += 1
            while i < len(lines) and not ATTR.match(lines[i]) and not DEF.match(lines[i]) and not CLASS.match(lines[i]):
                doc.append(lines[i])
                i += 1
            settable = any(l.startswith("Set: " + name + "(") for l in doc)
            cls["members"][name] = "P" if settable else "p"
            continue
        i += 1


def build(stubs):
    table, versions = {}, {}
    root = os.path.join(stubs, "Autodesk", "Revit")
    for dirpath, _, files in os.walk(root):
        for fn in sorted(files):
            if not fn.endswith(".py"):
                continue
            path = os.path.join(dirpath, fn)
            ns = namespace_of(os.path.relpath(path, stubs).replace(os.sep, "/"))
            if ns in NAMESPACES:
                parse_file(path, ns, table, versions)
    return table, versions


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stubs", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--revit", required=True, help="the Revit release the assemblies are from")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    table, versions = build(a.stubs)
    if not table:
        sys.exit("no classes found under %s/Autodesk/Revit" % a.stubs)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("{\"source\": %s,\n" % json.dumps({
            "repository": a.repo, "commit": a.commit, "path": "release/stubs.min/Autodesk/Revit",
            "namespaces": list(NAMESPACES),
            "revit": a.revit, "assemblies": versions,
            "made_by": "hosts/revit/tools/api_table.py"}, sort_keys=True))
        f.write("\"classes\": {\n")
        names = sorted(table)
        for n, name in enumerate(names):
            f.write("%s: %s%s\n" % (json.dumps(name), json.dumps(table[name], sort_keys=True, separators=(",", ":")),
                                    "," if n < len(names) - 1 else ""))
        f.write("}}\n")
    members = sum(len(c["members"]) for c in table.values())
    print("%d classes, %d members, assemblies %s" % (len(table), members, versions))


if __name__ == "__main__":
    main(sys.argv[1:])
