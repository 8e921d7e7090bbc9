#!/usr/bin/env python3
"""The CI checks fail on a violation: each case copies the repository's headers (or writes a
small tree) into a scratch folder, breaks one rule there and expects the check to exit 1 naming
it. A check that passed a broken tree would pass CI for anything.

Usage: test_checks.py layering|format REPO_ROOT WORK_DIR
Exit 0 when every case is caught; 1 otherwise; 77 (format) when clang-format 14 is missing.
"""

import os
import shutil
import subprocess
import sys

SKIP = 77


def run(args):
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def expect(name, args, code, needle):
    got, output = run(args)
    if got != code or needle not in output:
        print(f"FAIL {name}: expected exit {code} and '{needle}', got exit {got}:\n{output}")
        return False
    print(f"ok   {name}")
    return True


def layering(repo, work):
    script = os.path.join(repo, "tools", "check_layers.py")
    # (name, {header: text} added to a copy of include/, what the check must say). The headers
    # are new ones, so the cases hold whatever the real headers include.
    top = "#pragma once\n#include <vector>\n"
    cases = [
        ("upward include", {"tbatch/view/probe.hpp": top + '#include "tbatch/batch/probe.hpp"\n',
                            "tbatch/batch/probe.hpp": top},
         "includes tbatch/batch/probe.hpp from the later layer 'batch'"),
        ("sideways include", {"tbatch/io/probe.hpp": top + '#include "tbatch/mpi/probe.hpp"\n',
                              "tbatch/mpi/probe.hpp": top},
         "includes tbatch/mpi/probe.hpp from the sibling layer 'mpi'"),
        ("include of an umbrella", {"tbatch/ops/probe.hpp": top + '#include "tbatch/tbatch.hpp"\n'},
         "includes the umbrella tbatch/tbatch.hpp"),
        ("include cycle", {"tbatch/base/probe_a.hpp": top + '#include "tbatch/base/probe_b.hpp"\n',
                           "tbatch/base/probe_b.hpp": top + '#include "tbatch/base/probe_a.hpp"\n'},
         "include cycle: tbatch/base/probe_"),
        ("include after code", {"tbatch/base/probe.hpp": top + "inline int x = 0;\n#include <map>\n"},
         "tbatch/base/probe.hpp:4: #include after code"),
        ("folder that is not a layer", {"tbatch/extra/probe.hpp": top},
         "folder 'extra' is not a layer"),
    ]
    ok = True
    for name, headers, needle in cases:
        root = os.path.join(work, "layering", name.replace(" ", "_"))
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(os.path.join(repo, "include"), root)
        for header, text in headers.items():
            path = os.path.join(root, header)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        ok &= expect(name, [script, root], 1, needle)
    # Includes after comments, blank lines and other preprocessor lines are at the top.
    root = os.path.join(work, "layering", "includes_at_the_top")
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(os.path.join(repo, "include"), root)
    with open(os.path.join(root, "tbatch/base/probe.hpp"), "w", encoding="utf-8") as f:
        f.write("// A comment; int x = 0;\n#pragma once\n/* int y;\n */\n#define M(x) \\\n"
                "  int x;\n#if defined(M)\n#include <map>\n#endif\n\ninline int z = 0;\n")
    ok &= expect("includes after comments and directives", [script, root], 0, "layering holds")
    return ok


def format_check(repo, work):
    script = os.path.join(repo, "tools", "check_format.py")
    style = ["--style-file", os.path.join(repo, ".clang-format")]
    root = os.path.join(work, "format")
    shutil.rmtree(root, ignore_errors=True)
    for folder in ("include", "tests/fuzz/corpus", "examples"):
        os.makedirs(os.path.join(root, folder))
    with open(os.path.join(root, "include", "good.hpp"), "w") as f:
        f.write("#pragma once\n\nstruct One {\n  int one() const { return 1; }\n};\n")
    with open(os.path.join(root, "tests/fuzz/corpus", "input.cpp"), "w") as f:
        f.write("not  C++ at all {{\n")  # corpus files are data, never checked
    code, output = run([script, "--root", root, *style])
    if code == SKIP:
        print(output.strip())
        return SKIP
    ok = expect("formatted tree", [script, "--root", root, *style], 0, "1 files formatted")
    with open(os.path.join(root, "examples", "bad.cpp"), "w") as f:
        f.write("int  main( ){return 0;}\n")
    ok &= expect("unformatted file", [script, "--root", root, *style], 1,
                 "examples/bad.cpp: not clang-formatted")
    ok &= expect("no clang-format is a skip, not a pass",
                 [script, "--root", root, "--clang-format", os.path.join(root, "missing")], SKIP,
                 "SKIP")
    return ok


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("layering", "format"):
        print(__doc__)
        return 2
    check, repo, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    os.makedirs(work, exist_ok=True)
    result = layering(repo, work) if check == "layering" else format_check(repo, work)
    if result is SKIP:
        return SKIP
    return 0 if result else 1


if __name__ == "__main__":
    sys.exit(main())
