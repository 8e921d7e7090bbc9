#!/bin/sh
# Runs tbatch_compare and writes the comparison page: DOCS/benchmarks.md (machine, date, command,
# load, the table, the notes of benchmarks/compare/notes.md, the cost curves), DOCS/benchmarks.csv
# (the table, machine-readable), DOCS/images/benchmarks.png (a gnuplot bar chart of each bandwidth
# row's fraction of memcpy, tbatch next to its peers), and the cost curves: DOCS/curves/*.csv and
# the log-log charts DOCS/images/curves_*.png. Everything of DOCS/benchmarks.md from the
# compile-time section on (written by other reports and by hand) is carried over unchanged.
#
#   make_report.sh [--curves-only] TBATCH_COMPARE DOCS [GNUPLOT] [extra tbatch_compare arguments...]
#
# --curves-only measures only the curves (about 4 minutes; the table takes 30) and replaces
# only the "Cost curves" section of DOCS/benchmarks.md. The `compare` workflow preset runs the
# full report as the ctest test compare.report, the `curves` preset the curves as compare.curves.
set -eu
curves_only=false
if [ "${1:-}" = "--curves-only" ]; then
  curves_only=true
  shift
fi
exe=$1
docs=$2
gnuplot=${3:-gnuplot}
shift 2
if [ $# -gt 0 ]; then shift; fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Both libraries run on libgomp; on a small shared machine, workers that spin between parallel
# regions take the cores the next row needs, so they sleep instead.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[^:]*: *//')
mem=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
cache=$(grep -m1 '^cache size' /proc/cpuinfo | sed 's/^cache size[^:]*: *//')
mkdir -p "$docs/images" "$docs/curves"

# ---------------------------------------------------------------- cost curves
curve_args="--reps 7${*:+ $*}"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir "$work/curves"
"$exe" $curve_args --curves "$work/curves" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cp "$work"/curves/*.csv "$docs/curves/"

# Curve CSV columns: 1 op, 2 workload, 3 x (B, mean rows or bytes), 4 elements, 5 bytes,
# 6 tbatch_us, 7 torch_formulation, 8 torch_us, 9 memcpy_us, 10-12 tbatch/torch/memcpy GB/s,
# 13-15 tbatch/torch/memcpy ns per element, 16 load.
l1=$(getconf LEVEL1_DCACHE_SIZE 2>/dev/null || echo 0)
l2=$(getconf LEVEL2_CACHE_SIZE 2>/dev/null || echo 0)
l3=$(getconf LEVEL3_CACHE_SIZE 2>/dev/null || echo 0)
colors="#1f77b4 #ff7f0e #2ca02c #d62728"

# plot_clauses FILE Y_TBATCH Y_TORCH OP...: tbatch solid and libtorch dashed, one colour per op.
plot_clauses() {
  file=$1 y_tbatch=$2 y_torch=$3
  shift 3
  i=1
  for op in "$@"; do
    color=$(echo "$colors" | cut -d' ' -f$i)
    printf '"%s" using 3:(strcol(1) eq "%s" ? $%s : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb "%s" title "%s: tbatch", ' \
      "$file" "$op" "$y_tbatch" "$color" "$op"
    printf '"%s" using 3:(strcol(1) eq "%s" ? $%s : NaN) with linespoints dt 2 lw 1.5 pt 6 ps 0.6 lc rgb "%s" title "%s: libtorch (best)", ' \
      "$file" "$op" "$y_torch" "$color" "$op"
    i=$((i + 1))
  done
}
conversions="list_to_padded list_to_packed padded_to_packed packed_to_padded"
common='set terminal pngcairo size 1100,700 font "DejaVu Sans,9" noenhanced
set datafile separator ","
set datafile missing NaN
set logscale xy
set grid xtics ytics mxtics mytics lw 0.5 lc rgb "#dddddd"
set key outside right top'

# conversion_chart CSV PNG TITLE XLABEL XTICS YLABEL TBATCH_COL TORCH_COL MEMCPY_COL: the four
# conversions (tbatch and libtorch) and memcpy of list_to_packed's bytes over column 3 of CSV.
conversion_chart() {
  # shellcheck disable=SC2086 # the op names are single words
  "$gnuplot" <<EOF
$common
set output "$docs/images/$2"
set title "$3"
set xlabel "$4"
set xtics $5
set ylabel "$6"
plot $(plot_clauses "$1" "$7" "$8" $conversions) \
     "$1" using 3:(strcol(1) eq "list_to_packed" ? \$$9 : NaN) with lines dt 3 lw 2 lc rgb "black" title "memcpy of list_to_packed's bytes"
EOF
}

batch_csv="$work/curves/curves_conversions_batch.csv"
size_csv="$work/curves/curves_conversions_size.csv"
conversion_chart "$batch_csv" curves_conversions_batch.png \
  "Conversions: time per element over the batch size (elements U[1,7] x 16 f32, one thread; lower is better)" \
  "B (elements in the batch)" \
  '("1" 1, "10" 10, "100" 100, "1e3" 1e3, "1e4" 1e4, "1e5" 1e5, "1e6" 1e6)' \
  "ns per element" 13 14 15
conversion_chart "$size_csv" curves_conversions_size.png \
  "Conversions: bandwidth over the element size (B = 256, U[1,2m-1] x 16 f32 rows, one thread; higher is better)" \
  "m, mean rows per element (x 64 bytes)" \
  '("1" 1, "4" 4, "16" 16, "64" 64, "256" 256, "1024" 1024, "4096" 4096)' \
  "GB/s (bytes read + written)" 10 11 12

kernels_csv="$work/curves/curves_kernels.csv"
cache_marks=""
for level in "L1d:$l1" "L2:$l2" "L3:$l3"; do
  size=${level#*:}
  if [ "${size:-0}" -gt 0 ] && [ "$size" -le $((1 << 30)) ]; then
    if [ "$size" -ge 1048576 ]; then shown="$((size / 1048576)) MiB"; else shown="$((size / 1024)) KiB"; fi
    cache_marks="$cache_marks
set arrow from $size, graph 0 to $size, graph 1 nohead dt 4 lc rgb '#888888'
set label '${level%%:*} $shown (getconf)' at $size, graph 0.97 right offset -0.5,0 textcolor rgb '#666666'"
  fi
done
kernels="pad constant|scatter (index_add)|segment_reduce sum|space_to_batch_nd"
old_ifs=$IFS
IFS='|' # the kernel names have spaces
# shellcheck disable=SC2086
kernel_plot=$(plot_clauses "$kernels_csv" 10 11 $kernels)
IFS=$old_ifs
"$gnuplot" <<EOF
$common
set output "$docs/images/curves_kernels.png"
set title "Kernels: bandwidth over the total bytes (read + written), one thread; higher is better"
set xlabel "bytes read + written"
set ylabel "GB/s"
set xrange [1536:1.6e9]
set xtics ("4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304, "16 MiB" 16777216, "64 MiB" 67108864, "256 MiB" 268435456, "1 GiB" 1073741824)
$cache_marks
plot $kernel_plot \
     "$kernels_csv" using 3:12 with points pt 2 ps 0.8 lc rgb "black" title "memcpy of the same bytes (each kernel's)"
EOF

# pivot CSV "Y..." [nominal]: a markdown table with a row per op and a column per point, each
# cell the columns Y... of that point joined by " / ". With "nominal", the columns are headed by
# the nominal size (4 KiB x 4^k) rather than the x value.
pivot() {
  awk -F, -v cols="$2" -v nominal="${3:-}" '
    function human(b) {
      if (b >= 1073741824) return sprintf("%g GiB", b / 1073741824)
      if (b >= 1048576) return sprintf("%g MiB", b / 1048576)
      return sprintf("%g KiB", b / 1024)
    }
    function cell(v) { return v == "" ? "—" : sprintf("%.3g", v) }
    NR > 1 {
      if (!($1 in points)) ops[++n_ops] = $1
      k = ++points[$1]
      if (k > n_x) { n_x = k; x[k] = nominal ? human(4096 * 4 ^ (k - 1)) : sprintf("%d", $3) }
      n_cols = split(cols, c, " ")
      v = cell($(c[1]))
      for (j = 2; j <= n_cols; ++j) v = v " / " cell($(c[j]))
      value[$1, k] = v
    }
    END {
      line = "| op |"; rule = "|---|"
      for (k = 1; k <= n_x; ++k) { line = line " " x[k] " |"; rule = rule "--:|" }
      print line; print rule
      for (i = 1; i <= n_ops; ++i) {
        line = "| " ops[i] " |"
        for (k = 1; k <= n_x; ++k) line = line " " value[ops[i], k] " |"
        print line
      }
    }' "$1"
}

{
  echo "<!-- curves:begin -->"
  echo "## Cost curves"
  echo
  echo "Generated by \`cmake --workflow --preset curves\` (the ctest test compare.curves,"
  echo "\`benchmarks/compare/make_report.sh --curves-only\`: about 4 minutes, and it replaces only this"
  echo "section); the full \`compare\` preset writes it too."
  echo
  echo "* machine: $cpu, $(nproc) cores, L1d $((l1 / 1024)) KiB, L2 $((l2 / 1024)) KiB, L3 $((l3 / 1048576)) MiB as getconf reports it (/proc/cpuinfo: cache size $cache), $mem"
  echo "* date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "* command: \`OMP_WAIT_POLICY=$OMP_WAIT_POLICY tbatch_compare $curve_args --curves DIR\` (one thread; each point takes as many interleaved rounds as fit in 3 s, at least one)"
  echo "* load average (1, 5, 15 min) before: $load_before; after: $load_after"
  echo "* data: [docs/curves/](curves/) (per point: times, bandwidths, ns per element, the fastest libtorch formulation, the load)"
  echo
  echo "### Conversions over the batch size"
  echo
  echo "![conversions: ns per element over B](images/curves_conversions_batch.png)"
  echo
  echo "ns per element over B, tbatch / libtorch (best formulation) / memcpy of the same bytes:"
  echo
  pivot "$batch_csv" "13 14 15"
  echo
  echo "### Conversions over the element size"
  echo
  echo "![conversions: GB/s over the element size](images/curves_conversions_size.png)"
  echo
  echo "GB/s over m (mean rows of 16 floats per element, B = 256), tbatch / libtorch / memcpy:"
  echo
  pivot "$size_csv" "10 11 12"
  echo
  echo "### Kernels over the total size"
  echo
  echo "![kernels: GB/s over the bytes](images/curves_kernels.png)"
  echo
  echo "GB/s at each (nominal) size, tbatch / libtorch / memcpy of the same bytes:"
  echo
  pivot "$kernels_csv" "10 11 12" nominal
  echo
  cat "$here/curves_notes.md"
  echo "<!-- curves:end -->"
} >"$work/curves.md"

if $curves_only; then
  # Replace the curves section, or put it before the compile-time section if there is none.
  awk -v section="$work/curves.md" '
    function insert() { while ((getline line < section) > 0) print line; inserted = 1 }
    /^<!-- curves:begin -->$/ { insert(); skipping = 1; next }
    skipping { if ($0 == "<!-- curves:end -->") skipping = 0; next }
    !inserted && /^## Compile time$/ { insert(); print "" }
    { print }
    END { if (!inserted) insert() }' "$docs/benchmarks.md" >"$docs/benchmarks.md.new"
  mv "$docs/benchmarks.md.new" "$docs/benchmarks.md"
  exit 0
fi

# ---------------------------------------------------------------- the table
args="--reps 21 --threads 2${*:+ $*}"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$exe" $args --csv "$work/table.csv" --md "$work/table.md" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The compile-time section and everything after it (the footprint and many-small-elements
# reports, hand-written analysis) belong to other reports and to people: carried over unchanged.
carried_over=$(sed -n '/^<!-- compile-time:begin -->$/,$p' "$docs/benchmarks.md" 2>/dev/null || true)
{
  echo "# tbatch next to libtorch, Eigen Tensor and memcpy"
  echo
  echo "Generated by \`cmake --workflow --preset compare\` (benchmarks/compare/make_report.sh)."
  echo
  echo "* machine: $cpu, $(nproc) cores (nproc), cache $cache, $mem"
  echo "* date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "* command: \`OMP_WAIT_POLICY=$OMP_WAIT_POLICY tbatch_compare $args\`"
  echo "* load average (1, 5, 15 min) before: $load_before; after: $load_after"
  echo "* $(g++ --version | head -n1); libtorch $(awk '/define TORCH_VERSION_(MAJOR|MINOR|PATCH)/ {v = v sep $3; sep = "."} END {print v}' /usr/include/torch/csrc/api/include/torch/version.h 2>/dev/null); Eigen 3.4"
  echo
  echo "Times are medians over the interleaved rounds; \"libtorch / tbatch\" and \"Eigen / tbatch\""
  echo "are time ratios (above 1: tbatch is faster); \"of memcpy\" is memcpy's time for the same"
  echo "bytes over the op's time. The load column is the 1-minute load average when the row ran."
  echo
  echo "![bandwidth as a fraction of memcpy](images/benchmarks.png)"
  echo
  cat "$work/table.md"
  echo
  cat "$here/notes.md"
  echo
  cat "$work/curves.md"
  echo
  echo "## Compile time"
  echo
  if [ -n "$carried_over" ]; then
    echo "$carried_over"
  else
    printf '%s\n' '<!-- compile-time:begin -->' \
      'Not measured yet: run `cmake --workflow --preset compile-time`.' '<!-- compile-time:end -->'
  fi
} >"$docs/benchmarks.md.new"
mv "$docs/benchmarks.md.new" "$docs/benchmarks.md"

# Chart: rows with a bandwidth figure (bytes > 1 MB), tbatch / libtorch / Eigen of memcpy.
awk -F, 'NR > 1 && $5 > 1e6 {
  printf "\"%s\" %s %s %s\n", $1, ($15 == "" ? "NaN" : $15), ($16 == "" ? "NaN" : $16), ($17 == "" ? "NaN" : $17)
}' "$work/table.csv" >"$work/chart.dat"
"$gnuplot" <<EOF
set terminal pngcairo size 1200,680 font "DejaVu Sans,9" noenhanced
set output "$docs/images/benchmarks.png"
set title "Bandwidth as a fraction of memcpy of the same bytes (one thread unless marked; higher is better)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set ytics format "%.0f%%"
set grid ytics
set xtics rotate by -40 scale 0
set key top right
set rmargin 10
set bmargin 14
set datafile missing "NaN"
plot "$work/chart.dat" using (\$2*100):xtic(1) title "tbatch" lc rgb "#1f77b4", \
     "" using (\$3*100) title "libtorch (best formulation)" lc rgb "#ff7f0e", \
     "" using (\$4*100) title "Eigen Tensor" lc rgb "#2ca02c", \
     100 with lines dt 2 lc rgb "black" title "memcpy"
EOF
cp "$work/table.csv" "$docs/benchmarks.csv"
cat "$work/table.md"
