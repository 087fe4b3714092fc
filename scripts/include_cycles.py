#!/usr/bin/env python3
"""Fails when the C++ units under the given folders include each other in a cycle.

A unit is a header and the source file of the same name (foo.h + foo.cc); a source file
without a header of its own (foo_parts.cc) belongs to the unit of the first header it
includes, as it implements that header. An arrow goes from a unit to every unit whose
header one of its files includes. In a layered tree the arrows form no cycle: a cycle means
some unit points back up at one that depends on it. Tests, fuzz targets and test utilities
are left out. A tree with no units or no arrows fails too (the check would check nothing).

Usage: include_cycles.py ROOT FOLDER [FOLDER ...]
       include_cycles.py --self-test
"""
import os
import re
import sys
from typing import Dict, List, Set

INCLUDE = re.compile(r'^#include "([^"]+)\.h"', re.MULTILINE)


def is_production(path: str) -> bool:
    name = os.path.basename(path)
    return not (name.endswith("_test.cc") or "test_util" in name or "/fuzz/" in path)


def unit_of(root: str, rel: str, includes: List[str]) -> str:
    """The unit `rel` belongs to (see the module docstring); `includes` are its headers
    under the checked folders, in order."""
    stem = rel.rsplit(".", 1)[0]
    if rel.endswith(".h") or os.path.exists(os.path.join(root, stem + ".h")):
        return stem
    return includes[0] if includes else stem


def read_units(root: str, folders: List[str]) -> Dict[str, Set[str]]:
    """Maps each unit (its header's path without extension) to the units it includes."""
    arrows: Dict[str, Set[str]] = {}
    for folder in folders:
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if not name.endswith((".h", ".cc")):
                    continue
                rel = os.path.relpath(os.path.join(directory, name), root)
                if not is_production(rel):
                    continue
                with open(os.path.join(root, rel), encoding="utf-8") as f:
                    includes = [t for t in INCLUDE.findall(f.read())
                                if any(t.startswith(x.rstrip("/") + "/") for x in folders)]
                unit = unit_of(root, rel, includes)
                arrows.setdefault(unit, set()).update(t for t in includes if t != unit)
    return arrows


def cycles(arrows: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one unit (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    for start in sorted(arrows):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            unit, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(arrows.get(nxt, ())))))
                elif nxt in on_stack:
                    low[unit] = min(low[unit], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[unit])
            if low[unit] == index[unit]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == unit:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def self_test() -> int:
    """Checks the checker on two small trees: one layered, one with a cycle."""
    import tempfile
    trees = {
        False: {"a.h": "", "a.cc": '#include "t/a.h"\n#include "t/b.h"\n', "b.h": "",
                "a_parts.cc": '#include "other/x.h"\n#include "t/a.h"\n#include "t/b.h"\n'},
        True: {"a.h": "", "a.cc": '#include "t/a.h"\n#include "t/b.h"\n', "b.h": "",
               "b_parts.cc": '#include "t/b.h"\n#include "t/a.h"\n'},
    }
    for has_cycle, files in trees.items():
        with tempfile.TemporaryDirectory() as root:
            os.mkdir(os.path.join(root, "t"))
            for name, text in files.items():
                with open(os.path.join(root, "t", name), "w", encoding="utf-8") as f:
                    f.write(text)
            found = cycles(read_units(root, ["t"]))
            if bool(found) != has_cycle:
                print(f"self-test failed: expected cycle={has_cycle}, found {found}")
                return 1
    print("self-test passed")
    return 0


def main(argv: List[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    root, folders = argv[1], argv[2:]
    arrows = read_units(root, folders)
    found = cycles(arrows)
    total = sum(len(t) for t in arrows.values())
    print(f"{len(arrows)} units, {total} include arrows in {', '.join(folders)}; "
          f"{len(found)} cycles")
    if not arrows or total == 0:
        print("nothing to check: no units or no include arrows under those folders")
        return 1
    for component in found:
        members = set(component)
        print("cycle:")
        for unit in component:
            for target in sorted(arrows[unit] & members):
                print(f"  {unit} -> {target}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
