#!/usr/bin/env python3
"""Checks that tbatch's header folders are its layers.

Each folder under include/tbatch/ is a layer; LAYERS lists them lowest first, and is the one
place the order is written. A header may include headers of its own layer and of earlier
layers, never of a later one (upward) and never of another layer of the same rank (sideways:
the optional parts do not include each other). Headers directly in include/tbatch/ are
umbrellas and may include any layer. Cycles between files are errors too, also within a layer,
and so is an #include after code (an include at the end of a file hides a cycle): every file's
includes come first, after only comments and other preprocessor lines.

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
    "math",
    "batch",
    "ops",
    "ragged",
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


def strip_comments_and_literals(text):
    """`text` with comments and the contents of string and character literals blanked (newlines
    kept), so that what is left on a line is preprocessor text or code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A literal (a ' after a digit or letter is a digit separator: 1'000).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n)
            closed = j < n and text[j] == c
            out.append(c + "".join(ch if ch == "\n" else " " for ch in text[i + 1 : j]))
            out.append(c if closed else "")
            i = j + 1 if closed else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def includes_after_code(text):
    """Line numbers of the #include directives that follow code (anything but comments, blank
    lines and other preprocessor lines)."""
    late = []
    code_seen = False
    continued = False  # inside a directive continued with a backslash
    for number, line in enumerate(strip_comments_and_literals(text).split("\n"), start=1):
        stripped = line.strip()
        if continued:
            continued = stripped.endswith("\\")
            continue
        if not stripped:
            continue
        if stripped.startswith("#"):
            continued = stripped.endswith("\\")
            if re.match(r"#\s*include\b", stripped) and code_seen:
                late.append(number)
        else:
            code_seen = True
    return late


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
            text = f.read()
        graph[header] = INCLUDE.findall(text)
        for line in includes_after_code(text):
            problems.append(f"{header}:{line}: #include after code (includes go at the top)")
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
