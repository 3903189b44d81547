"""Lists the host kit's public functions that lack type hints.

A public function is a module's function, or a public class's method, whose
name does not start with an underscore, and a public class's __init__. Each
of its parameters (but self and cls) and its return need a hint, so that
mypy checks every call into the kit. Usage: public_hints.py FILE...; exit 1
with one line per function when any lacks one.
"""

import ast
import sys


def missing(fn):
    """The names of fn's parameters without a hint, and "return" when its
    return has none."""
    a = fn.args
    params = a.posonlyargs + a.args + a.kwonlyargs
    out = [p.arg for i, p in enumerate(params) if p.annotation is None and not (i == 0 and p.arg in ("self", "cls"))]
    for star in (a.vararg, a.kwarg):
        if star is not None and star.annotation is None:
            out.append(star.arg)
    if fn.returns is None and fn.name != "__init__":
        out.append("return")
    return out


def public(tree):
    """The public functions of a module, with their qualified names."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield node.name, node
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not item.name.startswith("_") or item.name == "__init__"):
                    yield node.name + "." + item.name, item


def main(paths):
    found = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for name, fn in public(tree):
            lacks = missing(fn)
            if lacks:
                found += 1
                print("%s:%d: %s has no type hint for %s" % (path, fn.lineno, name, ", ".join(lacks)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
