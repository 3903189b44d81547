"""The Revit add-in's cost on the double, by the size of the project: a
benchmark (figures to read, never a pass or a fail), run with
`make bench-revit` or python3 hosts/revit/bench/bench.py [--sizes 1000,10000,100000].

For each size it generates a project (revitdouble.projects), starts the
add-in's runtime on it in this process (the same code Connect starts inside
Revit), waits for the mirror's Idling slices to read the project, then posts
scripts to /v1/execute as Nexus does, with the change report (the epilogue
the capability service sends) after each commit. For each request it reads
the double's counter of Revit API calls, by caller (the add-in with its kit,
the change report, the script), and the time around the script: the
request's wall time less the time the script measured itself. It prints a
Markdown table (docs/bench.md keeps one) and the same as JSON with --json."""
import argparse
import json
import os
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REVIT = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(REVIT))
for p in (os.path.join(REVIT, "Nexus.extension", "lib"), os.path.join(REVIT, "double"), os.path.join(ROOT, "hosts")):
    if p not in sys.path:
        sys.path.insert(0, p)

TOKEN = "bench-token-0123456789"
TIMED = ("import time as _t\n_t0, _c0 = _t.perf_counter(), _t.thread_time()\n%s\n"
         "print('script-seconds', _t.perf_counter() - _t0, _t.thread_time() - _c0)\n")
ONE_CHANGE = """from Autodesk.Revit.DB import *
w = doc.GetElement(ElementId(%d))
w.LookupParameter("Mark").Set("bench %d")"""
MANY_CHANGES = """from Autodesk.Revit.DB import *
for k, i in enumerate(%r):
    doc.GetElement(ElementId(i)).LookupParameter("Mark").Set("bench %d-%%d" %% k)"""
WALLS = """from Autodesk.Revit.DB import *
level = FilteredElementCollector(doc).OfClass(Level).FirstElement()
for k in range(%d):
    y = %f + 3.0 * k
    Wall.Create(doc, Line.CreateBound(XYZ(-1000, y, 0), XYZ(-990, y, 0)), level.Id, False)"""


def epilogue():
    caps = os.path.join(ROOT, "services", "capability", "hosts")
    with open(os.path.join(caps, "revit_epilogue.py")) as a, open(os.path.join(caps, "change_report.py")) as b:
        code = a.read() + "\n\n" + b.read()
    import hashlib
    return {"code": code, "contentHash": hashlib.sha256(code.encode()).hexdigest()}


class Bench:
    def __init__(self, size):
        from revitdouble import Session
        from nexus_revit.runtime import Runtime
        self.size = size
        self.session = Session(project=size)
        self.elements = len(self.session.doc._elements)
        self.walls = sorted(i for i, e in self.session.doc._elements.items() if type(e).__name__ == "Wall")
        self.session.start()
        started = time.perf_counter()
        self.runtime = Runtime(self.session.uiapp, {"NEXUS_HOST_ADDR": "127.0.0.1:0", "NEXUS_HOST_TOKEN": TOKEN})
        mirror = self.runtime.adapter.mirror
        while not mirror.complete:
            time.sleep(0.01)
        self.connect_seconds = time.perf_counter() - started
        self.slices = list(self.session._idling)
        self.connect_calls = self.session._api_calls.by_caller.get("add-in", 0)
        self.epilogue = epilogue()
        self.n = 0

    def run(self, code, mode):
        self.n += 1
        calls = self.session._api_calls
        calls.reset()
        body = {"toolCallId": "bench-%d" % self.n, "mode": mode, "code": TIMED % code, "transactionName": "bench"}
        if mode == "MODE_TRANSACTION":
            body["epilogue"] = self.epilogue
        req = urllib.request.Request(self.runtime.url + "/v1/execute", json.dumps(body).encode(),
                                     {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        started, cpu = time.perf_counter(), time.process_time()
        with urllib.request.urlopen(req, timeout=3600) as r:
            out = json.loads(r.read())
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        if "error" in out:
            raise RuntimeError("bench script failed: %s" % out["error"])
        script, script_cpu = (float(x) for x in out["stdout"].split("script-seconds")[1].split()[:2])
        return {"seconds": wall, "script": script, "around": wall - script, "cpu": cpu,
                "aroundCpu": cpu - script_cpu,
                "addin": calls.by_caller.get("add-in", 0), "epilogue": calls.by_caller.get("epilogue", 0),
                "scriptCalls": calls.by_caller.get("script", 0)}

    def stop(self):
        self.runtime.stop()
        self.session.stop()


def measure(size, repeat):
    b = Bench(size)
    try:
        out = {"size": size, "elements": b.elements, "connectSeconds": b.connect_seconds,
               "idlingSlices": len(b.slices), "longestSliceMs": 1000 * max([w for w, _ in b.slices] or [0]),
               "longestSliceCpuMs": 1000 * max([c for _, c in b.slices] or [0]),
               "connectCalls": b.connect_calls}
        b.run("pass", "MODE_READ_ONLY")  # warm
        cases = (("read-only print(1)", "print(1)", "MODE_READ_ONLY"),
                 ("empty transaction", "pass", "MODE_TRANSACTION"),
                 ("one change", None, "MODE_TRANSACTION"),
                 ("1,000 changes", None, "MODE_TRANSACTION"))
        for name, code, mode in cases:
            best = None
            for k in range(repeat):
                if name == "one change":
                    code = ONE_CHANGE % (b.walls[k], k)
                elif name == "1,000 changes":
                    code = MANY_CHANGES % (b.walls[:1000], k)
                r = b.run(code, mode)
                if best is None or r["aroundCpu"] < best["aroundCpu"]:
                    best = r
            out[name] = best
        y = 10000.0
        for count in (500, 1000):
            r = b.run(WALLS % (count, y), "MODE_TRANSACTION")
            y += 3.0 * count + 100
            out["%d walls created" % count] = r
        return out
    finally:
        b.stop()


def table(results):
    lines = ["| elements | request | add-in API calls | change report calls | around the script: CPU | wall | "
             "the script: CPU |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        for name in ("read-only print(1)", "empty transaction", "one change", "1,000 changes",
                     "500 walls created", "1000 walls created"):
            x = r[name]
            lines.append("| %s | %s | %s | %s | %.1f ms | %.1f ms | %.1f ms |" % (
                format(r["elements"], ","), name.replace("1000 walls", "1,000 walls"), format(x["addin"], ","),
                format(x["epilogue"], ","), 1000 * x["aroundCpu"], 1000 * x["around"],
                1000 * (x["cpu"] - x["aroundCpu"])))
    lines += ["", "| elements | connect: Idling slices | longest slice: API thread CPU | wall | add-in API calls "
              "| until read (wall) |", "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        lines.append("| %s | %d | %.1f ms | %.1f ms | %s | %.1f s |" % (
            format(r["elements"], ","), r["idlingSlices"], r["longestSliceCpuMs"], r["longestSliceMs"],
            format(r["connectCalls"], ","), r["connectSeconds"]))
    lines += ["", "| elements | 1,000 walls created / 500: CPU of the whole request | wall |", "| ---: | ---: | ---: |"]
    for r in results:
        a, b = r["500 walls created"], r["1000 walls created"]
        lines.append("| %s | %.2fx | %.2fx |" % (format(r["elements"], ","), b["cpu"] / a["cpu"],
                                                  b["seconds"] / a["seconds"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="project sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each request; the fastest is kept")
    ap.add_argument("--json", default="", help="also write the figures as JSON to this file")
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        ap.error("--sizes takes whole numbers separated by commas, got %r" % args.sizes)
    if not sizes or any(s < 0 or s > 500000 for s in sizes) or args.repeat < 1:
        ap.error("--sizes takes 0 to 500,000 elements each, --repeat at least 1")
    results = []
    for size in sizes:
        sys.stderr.write("revit bench: %d elements...\n" % size)
        results.append(measure(size, args.repeat))
    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
