#!/usr/bin/env python3
"""Checks that every C++ file of tbatch is formatted by clang-format 14 with the repository's
.clang-format.

The files: every .hpp, .cpp and .h under include/, src/, tests/, examples/ and benchmarks/,
except the fuzz corpus and build trees. In a git checkout they are the files git knows (tracked,
plus untracked ones that are not ignored); otherwise the folders are walked.

Only clang-format 14 is used: other versions format some constructs differently, so with none,
or another version, the check is skipped (exit 77), never passed.

Usage: check_format.py [--root DIR] [--style-file FILE] [--clang-format PROGRAM]
  --root          the repository (default: this script's folder's parent)
  --style-file    the .clang-format to apply (default: ROOT/.clang-format)
  --clang-format  the program (default: $CLANG_FORMAT, else clang-format-14, else clang-format)
Exit 0 when every file is formatted; 1 listing the files that are not; 77 when skipped.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

FOLDERS = ("include", "src", "tests", "examples", "benchmarks")
EXTENSIONS = (".hpp", ".cpp", ".h")
# Not source: fuzz inputs, and build trees inside the folders.
EXCLUDED = re.compile(r"(^|/)(corpus|build[^/]*)/")
SKIP = 77


def find_clang_format(requested):
    candidates = [requested] if requested else [os.environ.get("CLANG_FORMAT"), "clang-format-14",
                                                 "clang-format"]
    for candidate in candidates:
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def source_files(root):
    try:
        listed = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
             "--", *FOLDERS],
            check=True, capture_output=True).stdout.decode().split("\0")
        in_git = subprocess.run(["git", "-C", root, "rev-parse", "--show-prefix"], check=True,
                                capture_output=True).stdout.strip() == b""
    except (OSError, subprocess.CalledProcessError):
        listed, in_git = [], False
    if not in_git:  # not a checkout, or root is a folder inside another repository
        listed = []
        for folder in FOLDERS:
            for parent, _, names in os.walk(os.path.join(root, folder)):
                rel = os.path.relpath(parent, root).replace(os.sep, "/")
                listed += [f"{rel}/{name}" for name in names]
    return sorted(
        path for path in set(listed)
        if path.endswith(EXTENSIONS) and not EXCLUDED.search(path)
        and os.path.isfile(os.path.join(root, path)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       ".."))
    parser.add_argument("--style-file")
    parser.add_argument("--clang-format")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    style_file = os.path.abspath(args.style_file or os.path.join(root, ".clang-format"))

    program = find_clang_format(args.clang_format)
    if program is None:
        print("SKIP: clang-format not found (Debian 12: apt-get install clang-format)")
        return SKIP
    version = subprocess.run([program, "--version"], capture_output=True, text=True).stdout
    if not re.search(r"version 14\.", version):
        print(f"SKIP: {program} is not clang-format 14 ({version.strip()}); set CLANG_FORMAT")
        return SKIP

    files = source_files(root)
    if not files:
        print(f"check_format: no source files under {root}")
        return 1
    # One clang-format run for all files; its diagnostics name the unformatted ones.
    result = subprocess.run(
        [program, f"--style=file:{style_file}", "--dry-run", "--Werror",
         *(os.path.join(root, path) for path in files)], capture_output=True, text=True)
    reported = {os.path.relpath(m, root).replace(os.sep, "/")
                for m in re.findall(r"^(.+?):\d+:\d+: error:", result.stderr, re.MULTILINE)}
    unformatted = [path for path in files if path in reported]
    if result.returncode != 0 and not unformatted:
        print(result.stderr.strip())
        print(f"check_format: {program} failed")
        return 1
    for path in unformatted:
        print(f"{path}: not clang-formatted")
    if unformatted:
        print(f"check_format: {len(unformatted)} of {len(files)} files not formatted; fix with\n"
              f"  clang-format -i " + " ".join(unformatted))
        return 1
    print(f"check_format: {len(files)} files formatted ({program})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
