#!/usr/bin/env python3
"""Runs every operation of the footprint program in a fresh process, buffer cache off and on,
two calls each, and prints a markdown table; with --markdown FILE it also replaces the text
between FILE's footprint markers with it (docs/benchmarks.md, section "Memory footprint")."""

import argparse
import shlex
import subprocess
import sys

BEGIN_MARKER = "<!-- footprint:begin -->"
END_MARKER = "<!-- footprint:end -->"


def measure(binary, operation, cache):
    """The key=value line of one fresh process, as a dict."""
    command = [binary, operation, "--calls", "2"] + ([] if cache else ["--no-cache"])
    line = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return dict(field.split("=", 1) for field in shlex.split(line))


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def table(binary):
    operations = subprocess.run([binary, "--list"], check=True, capture_output=True,
                                text=True).stdout.split()
    load_before = load_average()
    rows = [
        "| operation | workload | input MiB | output MiB | peak increase, cache off: 1st / 2nd "
        "call | cache on: 1st / 2nd call | hidden (increase - output), 1st call off / on | held "
        "after the result is freed, cache off / on |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for operation in operations:
        off, on = measure(binary, operation, False), measure(binary, operation, True)
        rows.append(
            f"| `{operation}` | {off['workload']} | {off['input_mib']} | {off['output_mib']} "
            f"| {off['increase1_mib']} / {off['increase2_mib']} "
            f"| {on['increase1_mib']} / {on['increase2_mib']} "
            f"| {off['hidden1_mib']} / {on['hidden1_mib']} "
            f"| {off['held_after2_mib']} / {on['held_after2_mib']} |")
    rows.append("")
    rows.append(f"Load average (1 min) {load_before} before the run, {load_average()} after; "
                "sizes in MiB (2^20 bytes).")
    return [row + "\n" for row in rows]


def write_between_markers(path, body):
    with open(path) as f:
        lines = f.readlines()
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN_MARKER]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_MARKER]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        sys.exit(f"footprint_report: {path} needs one {BEGIN_MARKER} line followed by one "
                 f"{END_MARKER} line")
    with open(path, "w") as f:
        f.writelines(lines[:begins[0] + 1] + body + lines[ends[0]:])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True, help="the footprint program")
    parser.add_argument("--markdown", help="file whose footprint markers receive the table")
    args = parser.parse_args()
    body = table(args.binary)
    sys.stdout.writelines(body)
    if args.markdown:
        write_between_markers(args.markdown, body)


if __name__ == "__main__":
    main()
