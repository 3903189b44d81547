"""Turns FreeCAD's own unittest suites into plain scripts for the corpus.

Run with python3 (3.9 or later, for ast.unparse):

    python3 convert.py FILE.py [FILE.py ...]

prints one JSON object: {"scripts": [...], "skipped": [...]}. Each script is
one test method of a unittest.TestCase, converted mechanically:

* self.assertTrue/failUnless/assertFalse/assertEqual/assertAlmostEqual
  become plain assert statements with the same message;
* self.doc becomes App.ActiveDocument (setUp only opens the document the
  test runs in, which is the runtime's own; tearDown only closes it, which the
  corpus does by emptying the document between scripts), so both are dropped;
* calls that only print (_msg, _wrn, App.Console.Print*, aux.draw_header)
  and docstrings are dropped, so the statements left are the test's doings;
* the module's imports and the module-level names the test uses (helpers
  such as checkBB, data such as a BREP string) form its prelude.

A test that replaces a module function with a placeholder (aux.fake_function)
tests nothing of FreeCAD and is skipped, with the reason. Each script also
names its split points: top-level boundaries right after the first statement
that builds something, after a recompute() and before the last statement that
calls Draft or Arch, where the first part has built
something for the rest to change.
"""
import ast
import json
import os
import sys

_ASSERTS = {"assertTrue", "failUnless", "assert_", "assertFalse", "failIf", "assertEqual", "assertAlmostEqual"}
_PRINTERS = {"_msg", "_wrn", "_err", "draw_header", "PrintLog", "PrintMessage", "PrintWarning", "PrintError"}
_OPERATION_MODULES = {"Draft", "Arch"}


class Unconvertible(Exception):
    """A test the converter cannot turn into a plain script."""


def _call_name(node):
    if not isinstance(node, ast.Call):
        return ""
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return ""


def _is_self_attr(node, attr=None):
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            and (attr is None or node.attr == attr))


def _arg(call, index, keyword):
    if len(call.args) > index:
        return call.args[index]
    for k in call.keywords:
        if k.arg == keyword:
            return k.value
    return None


def _plain_assert(call):
    """The assert statement a self.assert* call stands for."""
    kind = call.func.attr
    if kind in ("assertTrue", "failUnless", "assert_"):
        test, msg = _arg(call, 0, "expr"), _arg(call, 1, "msg")
    elif kind in ("assertFalse", "failIf"):
        test, msg = ast.UnaryOp(op=ast.Not(), operand=_arg(call, 0, "expr")), _arg(call, 1, "msg")
    elif kind == "assertEqual":
        test = ast.Compare(left=_arg(call, 0, "first"), ops=[ast.Eq()], comparators=[_arg(call, 1, "second")])
        msg = _arg(call, 2, "msg")
    else:  # assertAlmostEqual: equal, or within delta when given, else 7 places, as unittest does
        first, second = _arg(call, 0, "first"), _arg(call, 1, "second")
        diff = ast.Call(func=ast.Name(id="abs", ctx=ast.Load()),
                        args=[ast.BinOp(left=first, op=ast.Sub(), right=second)], keywords=[])
        delta = _arg(call, 3, "delta")
        if delta is not None:
            test = ast.Compare(left=diff, ops=[ast.LtE()], comparators=[delta])
        else:
            places = _arg(call, 2, "places") or ast.Constant(value=7)
            rounded = ast.Call(func=ast.Name(id="round", ctx=ast.Load()), args=[diff, places], keywords=[])
            test = ast.Compare(left=rounded, ops=[ast.Eq()], comparators=[ast.Constant(value=0)])
        test = ast.BoolOp(op=ast.Or(), values=[
            ast.Compare(left=first, ops=[ast.Eq()], comparators=[second]), test])
        msg = _arg(call, 4, "msg")
    if test is None:
        raise Unconvertible("%s without an expression" % kind)
    return ast.Assert(test=test, msg=msg)


class _Plain(ast.NodeTransformer):
    """Rewrites a test method's body into plain statements."""

    def visit_Expr(self, node):
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return None  # a docstring
        if isinstance(value, ast.Call) and _call_name(value) in _PRINTERS:
            return None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and _is_self_attr(value.func) \
                and value.func.attr in _ASSERTS:
            return ast.copy_location(self.generic_visit(_plain_assert(value)), node)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        if _is_self_attr(node, "doc"):
            return ast.copy_location(ast.Attribute(value=ast.Name(id="App", ctx=ast.Load()), attr="ActiveDocument",
                                                   ctx=node.ctx), node)
        if _is_self_attr(node):
            raise Unconvertible("uses self.%s, which only the test case holds" % node.attr)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == "self":
            raise Unconvertible("uses self itself")
        return node


def _fakes(method):
    """Names of module functions the test replaces by a placeholder."""
    out = []
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "fake_function":
            out.extend(ast.unparse(t) for t in node.targets)
    return out


def _names(nodes):
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _prelude(module, body):
    """The module's imports and the module-level definitions body uses."""
    imports = [n for n in module.body if isinstance(n, (ast.Import, ast.ImportFrom))
               and not any(a.name == "unittest" for a in n.names)]
    defs = {}
    for n in module.body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not any(
                isinstance(b, ast.Attribute) and b.attr == "TestCase" for b in getattr(n, "bases", [])):
            defs[n.name] = n
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            defs[n.targets[0].id] = n
    wanted, todo = set(), _names(body)
    while todo:
        name = todo.pop()
        if name in defs and name not in wanted:
            wanted.add(name)
            todo |= _names([defs[name]])
    kept = imports + [n for n in module.body if n in [defs[w] for w in wanted]]
    return "\n".join(ast.unparse(n) for n in kept)


def _calls_operation(stmt):
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id in _OPERATION_MODULES:
            return True
    return False


def _is_recompute(stmt):
    return isinstance(stmt, ast.Expr) and _call_name(stmt.value) == "recompute"


def split_points(statements):
    """Top-level boundaries k (the first part is statements[:k]) where the
    first part has built something and the rest goes on with it."""
    n = len(statements)
    first_build = next((i for i, s in enumerate(statements) if _calls_operation(s) or "addObject" in ast.unparse(s)), n)
    points = set()
    for k in range(first_build + 1, n):
        if _is_recompute(statements[k - 1]):
            points.add(k)
    last_op = max((i for i, s in enumerate(statements) if _calls_operation(s)), default=-1)
    if last_op > first_build:
        # Right after the first thing built, and before the operation under test.
        points.add(first_build + 1)
        points.add(last_op)
    # A split leaves the second part something to do besides asserting.
    return sorted(k for k in points if any(not isinstance(s, ast.Assert) for s in statements[k:]))


def convert(path, label):
    with open(path, encoding="utf-8") as f:
        module = ast.parse(f.read(), path)
    scripts, skipped = [], []
    for cls in module.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef) or not method.name.startswith("test"):
                continue
            name = "%s.%s" % (label, method.name)
            fakes = _fakes(method)
            if fakes:
                skipped.append({"name": name, "why": "replaces %s with a placeholder: it tests nothing of FreeCAD"
                                % ", ".join(fakes)})
                continue
            try:
                body = [s for s in (_Plain().visit(s) for s in method.body) if s is not None]
                body = [ast.fix_missing_locations(s) for s in body]
            except Unconvertible as exc:
                skipped.append({"name": name, "why": str(exc)})
                continue
            scripts.append({"name": name, "prelude": _prelude(module, body),
                            "statements": [ast.unparse(s) for s in body], "splits": split_points(body)})
    return scripts, skipped


def main(paths):
    scripts, skipped = [], []
    for path in paths:
        label = os.path.splitext(os.path.basename(path))[0]
        s, k = convert(path, label)
        scripts += s
        skipped += k
    json.dump({"scripts": scripts, "skipped": skipped}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
