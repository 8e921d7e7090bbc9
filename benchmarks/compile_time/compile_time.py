#!/usr/bin/env python3
"""Compile-time benchmark of tbatch's headers against Eigen (and xtensor).

Compiles each translation unit in tu/ with -c -o /dev/null at every -O level,
N times, and reports per row the best compiler CPU time (user + sys), the
ratios of that time to the two Eigen rows' at the same level (a MatrixXf copy,
and the product of the compile-time targets) and the peak RSS. --gate turns
limits on those ratios into a test (the ctest compile_time.gate).
From the repository root:

    python3 benchmarks/compile_time/compile_time.py \
        --markdown docs/benchmarks.md
"""

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TU_DIR = os.path.join(HERE, "tu")
INCLUDE_DIR = os.path.join(ROOT, "include")

BASELINE = "eigen_dense"
# The baseline of the compile-time targets (and of --gate): a file that multiplies two matrices.
PRODUCT = "eigen_product"
BEGIN_MARKER = "<!-- compile-time:begin -->"
END_MARKER = "<!-- compile-time:end -->"

# (row name = tu/<name>.cpp, what it includes and calls, header it needs or
# None). A row with a header is skipped, with a note, when that header is not
# on the compiler's include path.
ROWS = [
    ("eigen_dense", "`Eigen/Dense` + MatrixXf copy (baseline)", None),
    ("eigen_product", "`Eigen/Dense` + MatrixXf product `m * m.transpose()`",
     None),
    ("xtensor_ones", "`xtensor/xarray.hpp` + `xt::ones`",
     "xtensor/xarray.hpp"),
    ("tensor", "`tbatch/tensor/tensor.hpp` + `Tensor(shape, value)`", None),
    ("tensor_compiled",
     "`tbatch/tensor/tensor.hpp` + a `clone()` and `operator<<`, linking `tbatch::compiled`",
     None),
    ("layouts", "`tbatch/batch/layouts.hpp` + `PackedBatch`", None),
    ("conversions", "`tbatch/batch/conversions.hpp` + `list_to_padded`",
     None),
    ("pad", "`tbatch/ops/pad.hpp` + `pad`", None),
    ("pad_compiled",
     "the same, linking `tbatch::compiled` (`TBATCH_COMPILED`)", None),
    ("scatter", "`tbatch/ops/scatter.hpp` + `scatter`", None),
    ("scatter_compiled",
     "the same, linking `tbatch::compiled` (`TBATCH_COMPILED`)", None),
    ("segment", "`tbatch/ops/segment.hpp` + `segment_reduce`", None),
    ("space_to_batch",
     "`tbatch/ops/space_to_batch.hpp` + `space_to_batch_nd`", None),
    ("tensor_dict", "`tbatch/dict/tensor_dict.hpp` + `TensorDict`", None),
    ("tensor_dict_compiled",
     "the same, linking `tbatch::compiled` (`TBATCH_COMPILED`)", None),
    ("tbatch", "`tbatch/tbatch.hpp` + `list_to_padded`", None),
    ("tbatch_compiled",
     "the same, linking `tbatch::compiled` (`TBATCH_COMPILED`)", None),
    ("math", "`tbatch/tbatch.hpp` + `-`, `*`, `abs`, `>`, `where`, `exp`", None),
    ("math_compiled",
     "the same, linking `tbatch::compiled` (`TBATCH_COMPILED`)", None),
    ("dlpack", "`tbatch/dlpack.hpp` + `to_dlpack` and `from_dlpack`",
     "dlpack/dlpack.h"),
    ("dlpack_compiled",
     "the same, linking `tbatch::compiled` (`TBATCH_COMPILED`)",
     "dlpack/dlpack.h"),
    ("safetensors", "`tbatch/io/safetensors.hpp` + `io::save` and `io::load`",
     "nlohmann/json.hpp"),
    ("safetensors_compiled",
     "the same, linking `tbatch::io_compiled` (`TBATCH_COMPILED`)",
     "nlohmann/json.hpp"),
]
# The Debian package of each optional header a row needs.
PACKAGES = {"xtensor/xarray.hpp": "libxtensor-dev",
            "nlohmann/json.hpp": "nlohmann-json3-dev",
            "dlpack/dlpack.h": "libdlpack-dev"}
ROW_NAMES = [name for name, _, _ in ROWS]


class BenchError(Exception):
    """A failure that ends the run with a message and a non-zero status."""


def parse_args(argv):
    # argparse reads "--levels -O0" as two options; glue the value on so the
    # natural spelling works.
    fixed = []
    i = 0
    while i < len(argv):
        if argv[i] == "--levels" and i + 1 < len(argv):
            fixed.append("--levels=" + argv[i + 1])
            i += 2
        else:
            fixed.append(argv[i])
            i += 1

    p = argparse.ArgumentParser(
        description="Measure the compile time and peak memory of one-call "
                    "translation units using tbatch's headers, next to "
                    "Eigen's.")
    p.add_argument("--compiler", default="g++",
                   help="C++ compiler to measure (default: g++)")
    p.add_argument("--repeat", type=int, default=3, metavar="N",
                   help="compiles per row and level; the best CPU time "
                        "is kept (default: 3)")
    p.add_argument("--only", metavar="NAME[,NAME]",
                   help="rows to run, from: " + ", ".join(ROW_NAMES) +
                        f" ({BASELINE} always runs: it is what the ratios "
                        "are to)")
    p.add_argument("--levels", default="-O0,-O2", metavar="-O0,-O2",
                   help="optimisation levels (default: -O0,-O2)")
    p.add_argument("--markdown", metavar="FILE",
                   help=f"write the table into FILE between {BEGIN_MARKER} "
                        f"and {END_MARKER} instead of printing it")
    p.add_argument("--json", metavar="FILE",
                   help="also write every run's raw numbers to FILE")
    p.add_argument("--gate", metavar="ROW:WHAT:MAX[,...]",
                   help="fail (exit 1) when a row costs more than MAX times "
                        f"the {PRODUCT} row of the same run; WHAT is an -O "
                        "level (best CPU time) or rss (peak RSS), e.g. "
                        "tbatch:-O0:2.5,tbatch:rss:2")
    p.add_argument("--gate-retries", type=int, default=2, metavar="N",
                   help="rounds measured again, at most, while a --gate "
                        "limit is exceeded (default: 2)")
    args = p.parse_args(fixed)

    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.gate_retries < 0:
        p.error("--gate-retries must be at least 0")
    levels = []
    for level in args.levels.split(","):
        level = level.strip()
        if not level:
            continue
        if not level.startswith("-"):
            level = "-" + level
        if not level.startswith("-O"):
            p.error(f"--levels: {level!r} is not an -O level")
        levels.append(level)
    if not levels:
        p.error("--levels is empty")
    args.levels = levels

    args.gates = []
    for spec in (args.gate or "").split(","):
        if not spec.strip():
            continue
        parts = spec.strip().split(":")
        if len(parts) != 3 or parts[0] not in ROW_NAMES:
            p.error(f"--gate: {spec!r} is not ROW:WHAT:MAX with ROW one of "
                    + ", ".join(ROW_NAMES))
        row, what, limit = parts
        if what != "rss" and what not in levels:
            p.error(f"--gate: {spec!r}: WHAT must be rss or one of the "
                    f"measured levels ({', '.join(levels)})")
        try:
            limit = float(limit)
        except ValueError:
            p.error(f"--gate: {spec!r}: MAX must be a number")
        args.gates.append((row, what, limit))

    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in ROW_NAMES]
        if unknown:
            p.error("--only: unknown row(s) " + ", ".join(unknown) +
                    "; rows are " + ", ".join(ROW_NAMES))
        wanted += [BASELINE, PRODUCT] + [row for row, _, _ in args.gates]
        args.rows = [r for r in ROWS if r[0] in wanted]
    else:
        args.rows = list(ROWS)
    return args


def gate_failures(result, gates):
    """The --gate limits that `result` exceeds, one line each."""
    product = result["rows"][PRODUCT]
    failures = []
    for row, what, limit in gates:
        if row not in result["rows"]:  # skipped: its header is missing (a note says which)
            print(f"gate {row} {what}: skipped", file=sys.stderr)
            continue
        entry = result["rows"][row]
        if what == "rss":
            ratio = entry["max_rss_mb"] / product["max_rss_mb"]
            measured = f"{entry['max_rss_mb']:.0f} MB"
        else:
            ratio = entry["levels"][what]["x_product"]
            measured = f"{entry['levels'][what]['best_cpu_s']:.2f} s"
        status = "ok" if ratio <= limit else "FAILS"
        print(f"gate {row} {what}: {measured}, {ratio:.2f}x {PRODUCT} "
              f"(limit {limit:.2f}x): {status}", file=sys.stderr)
        if ratio > limit:
            failures.append(f"{row} at {what} costs {ratio:.2f}x {PRODUCT}, "
                            f"over the limit {limit:.2f}x")
    return failures


def eigen_include_dir():
    try:
        out = subprocess.run(["pkg-config", "--cflags", "eigen3"],
                             capture_output=True, text=True, check=True)
        for flag in shlex.split(out.stdout):
            if flag.startswith("-I"):
                path = flag[2:]
                if os.path.isfile(os.path.join(path, "Eigen", "Dense")):
                    return path
    except (OSError, subprocess.CalledProcessError):
        pass
    path = "/usr/include/eigen3"
    if os.path.isfile(os.path.join(path, "Eigen", "Dense")):
        return path
    raise BenchError("Eigen 3 not found: neither `pkg-config --cflags "
                     "eigen3` nor /usr/include/eigen3 has Eigen/Dense "
                     "(Debian: apt-get install libeigen3-dev)")


def compiler_version(compiler):
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True,
                             text=True)
    except OSError as e:
        raise BenchError(f"cannot run the compiler {compiler!r}: {e}")
    if out.returncode != 0 or not out.stdout.strip():
        raise BenchError(f"`{compiler} --version` failed:\n"
                         f"{out.stdout}{out.stderr}")
    return out.stdout.splitlines()[0].strip()


def has_header(compiler, flags, header):
    # Preprocessing a __has_include test asks the compiler itself, with the
    # same flags, without parsing the header.
    source = f"#if __has_include(<{header}>)\nTBATCH_FOUND\n#endif\n"
    out = subprocess.run([compiler, "-std=c++20", *flags, "-E", "-P",
                          "-x", "c++", "-"], input=source,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"the compiler failed to preprocess a "
                         f"__has_include test:\n{out.stdout}{out.stderr}")
    return "TBATCH_FOUND" in out.stdout


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def compile_once(cmd):
    """Runs one compile; returns its CPU seconds, user, sys, peak RSS KiB."""
    with tempfile.TemporaryFile() as log:
        fd = log.fileno()
        actions = [(os.POSIX_SPAWN_DUP2, fd, 1),
                   (os.POSIX_SPAWN_DUP2, fd, 2)]
        try:
            pid = os.posix_spawnp(cmd[0], cmd, os.environ,
                                  file_actions=actions)
        except OSError as e:
            raise BenchError(f"cannot run {cmd[0]!r}: {e}")
        # wait4 gives this child's own rusage: CPU time and ru_maxrss cover
        # the driver and the cc1plus/as processes it waited for, and nothing
        # else this script ran.
        _, status, usage = os.wait4(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            log.seek(0)
            output = log.read().decode(errors="replace")
            raise BenchError(f"compile failed (exit status {code}):\n"
                             f"  {shlex.join(cmd)}\n{output}")
    user, system = usage.ru_utime, usage.ru_stime
    # Linux reports ru_maxrss in KiB.
    return user + system, user, system, usage.ru_maxrss


def run(args):
    eigen = eigen_include_dir()
    include_flags = ["-I" + INCLUDE_DIR, "-I" + eigen]
    version = compiler_version(args.compiler)

    notes = []
    rows = []
    for name, label, header in args.rows:
        path = os.path.join(TU_DIR, name + ".cpp")
        if not os.path.isfile(path):
            raise BenchError(f"missing translation unit {path}")
        if header and not has_header(args.compiler, include_flags, header):
            notes.append(f"{name} skipped: <{header}> not found "
                         f"(Debian: apt-get install {PACKAGES[header]})")
            continue
        rows.append((name, label, path))

    load_start = load_average()
    started = datetime.datetime.now(datetime.timezone.utc)
    runs = []
    measure_rounds(args, rows, include_flags, args.repeat, runs)
    load_end = load_average()
    return {
        "compiler": args.compiler,
        "compiler_version": version,
        "flags": ["-std=c++20", *include_flags, "-c", "-o", "/dev/null"],
        "levels": args.levels,
        "repeat": args.repeat,
        "nproc": len(os.sched_getaffinity(0)),
        "loadavg_1min_start": load_start,
        "loadavg_1min_end": load_end,
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "notes": notes,
        "rows": summarize(args, rows, runs),
        "runs": runs,
        "measured_rows": rows,
        "include_flags": include_flags,
    }


def measure_rounds(args, rows, include_flags, rounds, runs):
    """Compiles every row at every level `rounds` times, appending to `runs`."""
    first = 1 + max((r["repeat"] for r in runs), default=-1)
    # Rounds interleave rows and levels so that a change in machine load
    # during the run hits the baseline and the other rows alike.
    for rep in range(first, first + rounds):
        for level in args.levels:
            for name, _, path in rows:
                cmd = [args.compiler, "-std=c++20", level, *include_flags,
                       "-c", "-o", "/dev/null", path]
                cpu, user, system, rss = compile_once(cmd)
                runs.append({"row": name, "level": level, "repeat": rep,
                             "cpu_s": cpu, "user_s": user, "sys_s": system,
                             "max_rss_kib": rss})
                print(f"[{rep + 1}/{first + rounds}] {level} {name}: "
                      f"{cpu:.2f} s, {rss / 1024:.0f} MB", file=sys.stderr)


def summarize(args, rows, runs):
    """Each row's best CPU time per level, its ratios, and its peak RSS."""
    summary = {}
    for name, label, _ in rows:
        mine = [r for r in runs if r["row"] == name]
        entry = {"label": label,
                 "max_rss_mb": max(r["max_rss_kib"] for r in mine) / 1024,
                 "levels": {}}
        for level in args.levels:
            entry["levels"][level] = {
                "best_cpu_s": min(r["cpu_s"] for r in mine
                                  if r["level"] == level)}
        summary[name] = entry
    for name, entry in summary.items():
        for level, cell in entry["levels"].items():
            base = summary[BASELINE]["levels"][level]["best_cpu_s"]
            product = summary[PRODUCT]["levels"][level]["best_cpu_s"]
            cell["x_eigen"] = cell["best_cpu_s"] / base if base > 0 else None
            cell["x_product"] = (cell["best_cpu_s"] / product
                                 if product > 0 else None)
    return summary


def table(result):
    levels = result["levels"]
    head = ["translation unit"]
    for level in levels:
        head += [f"{level} CPU s", f"{level} x Eigen", f"{level} x product"]
    head.append("peak RSS MB")
    lines = ["| " + " | ".join(head) + " |",
             "|---" + "|--:" * (len(head) - 1) + "|"]
    for name, entry in result["rows"].items():
        cells = [f"`{name}`: {entry['label']}"]
        for level in levels:
            cell = entry["levels"][level]
            cells.append(f"{cell['best_cpu_s']:.2f}")
            for ratio in (cell["x_eigen"], cell["x_product"]):
                cells.append("—" if ratio is None else f"{ratio:.2f}x")
        cells.append(f"{entry['max_rss_mb']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"{result['compiler_version']} (`{result['compiler']}`); "
        f"best CPU time (user + sys) of {result['repeat']} compile(s) per "
        f"level, max peak RSS; nproc {result['nproc']}; 1-minute load "
        f"average {result['loadavg_1min_start']:.2f} at start, "
        f"{result['loadavg_1min_end']:.2f} at end; {result['date']}.")
    for note in result["notes"]:
        lines.append("")
        lines.append(f"Note: {note}.")
    return "\n".join(lines) + "\n"


def read_marked(path):
    """Returns FILE's lines and the indexes of its begin and end markers."""
    try:
        with open(path) as f:
            lines = f.read().splitlines(keepends=True)
    except OSError as e:
        raise BenchError(f"cannot read {path}: {e}")
    begins = [i for i, line in enumerate(lines)
              if line.strip() == BEGIN_MARKER]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_MARKER]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        raise BenchError(
            f"{path} needs one line {BEGIN_MARKER} and, after it, one line "
            f"{END_MARKER} to mark where the table goes (found "
            f"{len(begins)} begin and {len(ends)} end marker(s)); add them "
            f"and run again")
    return lines, begins[0], ends[0]


def write_markdown(path, text):
    lines, begin, end = read_marked(path)
    body = [line + "\n" for line in text.rstrip("\n").split("\n")]
    with open(path, "w") as f:
        f.writelines(lines[:begin + 1] + body + lines[end:])


def main(argv):
    args = parse_args(argv)
    try:
        # Fail on missing markers before spending minutes compiling.
        if args.markdown:
            read_marked(args.markdown)
        result = run(args)
        failures = gate_failures(result, args.gates)
        # A burst of load on a shared machine can slow one compile by half: a
        # row over its limit is measured again (every row, so the ratios stay
        # within one run), and only a row that stays over it fails.
        for retry in range(args.gate_retries if failures else 0):
            print(f"gate: {len(failures)} limit(s) exceeded; measuring "
                  f"another round ({retry + 1}/{args.gate_retries})",
                  file=sys.stderr)
            measure_rounds(args, result["measured_rows"],
                           result["include_flags"], 1, result["runs"])
            result["repeat"] += 1
            result["rows"] = summarize(args, result["measured_rows"],
                                       result["runs"])
            failures = gate_failures(result, args.gates)
            if not failures:
                break
        del result["measured_rows"], result["include_flags"]
        text = table(result)
        if args.markdown:
            write_markdown(args.markdown, text)
            print(f"wrote the compile-time table to {args.markdown}",
                  file=sys.stderr)
        else:
            sys.stdout.write(text)
        if args.json:
            try:
                with open(args.json, "w") as f:
                    json.dump(result, f, indent=2)
                    f.write("\n")
            except OSError as e:
                raise BenchError(f"cannot write {args.json}: {e}")
        if failures:
            raise BenchError("compile-time gate: " + "; ".join(failures))
    except BenchError as e:
        print(f"compile_time.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
