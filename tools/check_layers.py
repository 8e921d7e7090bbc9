#!/usr/bin/env python3
"""Checks that tbatch's header folders are its layers.

Each folder under include/tbatch/ is a layer; LAYERS lists them lowest first, and is the one
place the order is written. A header may include headers of its own layer and of earlier
layers, never of a later one (upward) and never of another layer of the same rank (sideways:
the optional parts do not include each other). Headers directly in include/tbatch/ are
umbrellas and may include any layer. Cycles between files are errors too, also within a layer.

Usage: check_layers.py [include-dir]   (default: include/ beside this script's folder)
Exit 0 when the layering holds; 1 with one line per violation otherwise.
"""

import os
import re
import sys

# Lowest first. A tuple holds layers of equal rank, which must not include each other.
LAYERS = [
    "base",
    "view",
    "tensor",
    "batch",
    "ops",
    "dict",
    ("interop", "io", "mpi"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](tbatch/[^>"]+)[>"]', re.MULTILINE)


def rank_of(layer):
    for rank, entry in enumerate(LAYERS):
        if layer == entry or (isinstance(entry, tuple) and layer in entry):
            return rank
    return None


def headers(root):
    for folder, _, files in os.walk(os.path.join(root, "tbatch")):
        for name in files:
            if name.endswith(".hpp"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, root).replace(os.sep, "/")


def layer_of(header):
    parts = header.split("/")
    return parts[1] if len(parts) > 2 else None  # None: an umbrella in include/tbatch/


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "include")
    graph = {}
    problems = []
    for header in sorted(headers(root)):
        with open(os.path.join(root, header), encoding="utf-8") as f:
            graph[header] = INCLUDE.findall(f.read())
        layer = layer_of(header)
        if layer is not None and rank_of(layer) is None:
            problems.append(f"{header}: folder '{layer}' is not a layer (add it to LAYERS)")
    for header, includes in graph.items():
        layer = layer_of(header)
        if layer is None or rank_of(layer) is None:
            continue
        for target in includes:
            if target not in graph:
                problems.append(f"{header}: includes {target}, which does not exist")
                continue
            other = layer_of(target)
            if other is None:
                problems.append(f"{header}: includes the umbrella {target}")
            elif other != layer and rank_of(other) is not None:
                if rank_of(other) > rank_of(layer):
                    problems.append(f"{header}: includes {target} from the later layer '{other}'")
                elif rank_of(other) == rank_of(layer):
                    problems.append(f"{header}: includes {target} from the sibling layer '{other}'")
    # Cycles: depth-first search, reporting each back edge's cycle once.
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in graph.get(node, []):
            if target not in graph:
                continue
            if state.get(target) == "open":
                cycle = stack[stack.index(target):] + [target]
                problems.append("include cycle: " + " -> ".join(cycle))
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    sys.setrecursionlimit(10000)
    for header in graph:
        if header not in state:
            visit(header)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} violation(s); the layers, lowest first: {LAYERS}")
        return 1
    print(f"check_layers: {len(graph)} headers, layering holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
