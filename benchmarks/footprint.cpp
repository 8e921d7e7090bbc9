// footprint (issue 21): the memory one operation costs, measured in a fresh process.
//
// The process builds the operation's inputs (every page written), notes its resident set, then
// calls the operation `calls` times; before each call the kernel's peak-RSS mark is reset
// (/proc/self/clear_refs), so VmHWM after the call is that call's peak. A call's result is
// destroyed before the next call. For every call it prints the peak increase over the resident
// set before the first call and, once the result is freed, the resident set left: with the
// buffer cache on, a freed result stays resident (kept for reuse) and the next call's result
// reuses it. increase - output bytes is what the operation held besides its result: temporaries
// plus whatever the buffer cache holds from an earlier call that the call could not reuse.
//
// VmHWM rather than getrusage's ru_maxrss: ru_maxrss cannot be reset, and on Linux it starts
// from the peak of the process that forked this one. Blocks of 128 KiB and more are mapped on
// allocation and unmapped on free (M_MMAP_THRESHOLD fixed), so memory the setup freed is never
// quietly reused by the operation; glibc's default raises that threshold after frees.
//
//   footprint OPERATION [--no-cache] [--calls N]     (footprint --list names the operations)
//
// prints one line of key=value pairs, sizes in MiB (2^20 bytes).

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tbatch/tbatch.hpp>

#include "workloads.hpp"

namespace {

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::PaddedBatch;
using tbatch::PadMode;
using tbatch::Reduce;
using tbatch::Shape;
using tbatch::Tensor;

constexpr double kMiB = 1 << 20;

// ------------------------------------------------------------------ resident set

/// A field of /proc/self/status in bytes (VmRSS, VmHWM).
double status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream value(line.substr(field.size() + 1));
      double kib = 0;
      value >> kib;
      return kib * 1024;
    }
  std::fprintf(stderr, "footprint: no %s in /proc/self/status\n", field.c_str());
  std::exit(1);
}

/// Sets the peak-RSS mark (VmHWM) to the current resident set.
void reset_peak() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  if (!clear_refs) {
    std::fprintf(stderr, "footprint: cannot reset the peak through /proc/self/clear_refs\n");
    std::exit(1);
  }
}

// ------------------------------------------------------------------ workloads

template <class T>
double bytes_of(const Tensor<T>& t) {
  return double(t.numel()) * double(sizeof(T));
}
template <class T>
double bytes_of(const PaddedBatch<T>& b) {
  return bytes_of(b.data()) + bytes_of(b.shape_per_tensor());
}
template <class T>
double bytes_of(const PackedBatch<T>& b) {
  return bytes_of(b.data()) + bytes_of(b.shape_per_tensor()) + bytes_of(b.first_idx());
}

/// A call's result, kept alive until destroyed, and its own bytes (data + metadata).
struct Output {
  std::shared_ptr<const void> result;
  double bytes = 0;
};
template <class R>
Output hold(R result) {
  const double bytes = bytes_of(result);
  return {std::make_shared<const R>(std::move(result)), bytes};
}

struct Workload {
  std::string description;
  double input_bytes = 0;
  std::function<Output()> run;
};

using tbatch_bench::random_tensor;

/// The compare report's conversion workload: 256 point clouds of U[1, 1024] rows of 64 floats.
std::vector<Tensor<float>> point_clouds() {
  return tbatch_bench::point_sets(256, 1024, 64, 42);
}
const char* const kCloudsDescription = "256 x U[1,1024] x 64 f32";

double list_bytes(const std::vector<Tensor<float>>& list) {
  double bytes = 0;
  for (const auto& t : list)
    bytes += bytes_of(t);
  return bytes;
}

Workload list_workload(std::function<Output(const std::vector<Tensor<float>>&)> convert) {
  auto list = std::make_shared<const std::vector<Tensor<float>>>(point_clouds());
  return {kCloudsDescription, list_bytes(*list), [list, convert] { return convert(*list); }};
}

template <class Batch, class Run>
Workload batch_workload(const std::string& suffix, Batch batch, Run run) {
  auto input = std::make_shared<const Batch>(std::move(batch));
  return {std::string(kCloudsDescription) + suffix, bytes_of(*input),
          [input, run] { return hold(run(*input)); }};
}

Workload dense_pad(PadMode mode) {
  auto x = std::make_shared<const Tensor<float>>(random_tensor(Shape{32, 64, 56, 56}, 3));
  return {"(32,64,56,56) f32, 1 on H,W", bytes_of(*x), [x, mode] {
            return hold(tbatch::pad(*x, {1, 1, 1, 1}, mode));
          }};
}

/// The compare report's scatter workload: 1e6 updates of 16 floats into 1e5 rows, random rows.
struct ScatterInputs {
  static constexpr index_t updates_rows = 1'000'000, rows = 100'000, cols = 16;
  Tensor<float> x{Shape{rows, cols}, 1.f};
  Tensor<float> updates = random_tensor(Shape{updates_rows, cols}, 5);
  Tensor<index_t> index = Tensor<index_t>::empty(Shape{updates_rows});
  ScatterInputs() {
    std::mt19937 rng(7);
    std::uniform_int_distribution<index_t> row(0, rows - 1);
    for (index_t i = 0; i < updates_rows; ++i)
      index.data()[i] = row(rng);
  }
  double bytes() const { return bytes_of(x) + bytes_of(updates) + bytes_of(index); }
};
const char* const kScatterDescription = "1e6x16 f32 into 1e5 rows, random";

template <class Run>
Workload scatter_workload(Run run) {
  auto in = std::make_shared<ScatterInputs>();
  return {kScatterDescription, in->bytes(), [in, run] { return run(*in); }};
}

Workload scatter_reduce_workload(Reduce reduce) {
  auto in = std::make_shared<ScatterInputs>();
  // torch's scatter_reduce takes an index of src's shape: the row index repeated across the 16
  // columns, as a broadcast view (no copy).
  auto index = std::make_shared<const Tensor<index_t>>(
      in->index.reshape({ScatterInputs::updates_rows, 1})
          .expand({ScatterInputs::updates_rows, ScatterInputs::cols}));
  return {std::string(kScatterDescription) + ", dim 0, index broadcast over columns", in->bytes(),
          [in, index, reduce] {
            return hold(tbatch::scatter_reduce(in->x, 0, *index, in->updates, reduce));
          }};
}

Workload segment_workload(Reduce reduce) {
  constexpr index_t rows = 1'000'000, segments = 100'000;
  auto values = std::make_shared<const Tensor<float>>(random_tensor(Shape{rows, 16}, 9));
  auto first_idx = std::make_shared<Tensor<index_t>>(Tensor<index_t>::empty(Shape{segments + 1}));
  std::mt19937 rng(11);
  std::uniform_int_distribution<index_t> cut(0, rows);
  std::vector<index_t> cuts(segments - 1);
  for (auto& c : cuts)
    c = cut(rng);
  std::sort(cuts.begin(), cuts.end());
  first_idx->data()[0] = 0;
  std::copy(cuts.begin(), cuts.end(), first_idx->data() + 1);
  first_idx->data()[segments] = rows;
  return {"1e6x16 f32, 1e5 segments", bytes_of(*values) + bytes_of(*first_idx),
          [values, first_idx, reduce] {
            return hold(tbatch::segment_reduce(*values, *first_idx, reduce));
          }};
}

Workload space_workload(bool to_batch) {
  const std::vector<index_t> block{2, 2};
  const std::vector<std::array<index_t, 2>> none{{0, 0}, {0, 0}};
  const Shape shape = to_batch ? Shape{8, 224, 224, 64} : Shape{32, 112, 112, 64};
  auto x = std::make_shared<const Tensor<float>>(random_tensor(shape, 13));
  return {"(8,224,224,64) f32, block 2x2", bytes_of(*x), [x, block, none, to_batch] {
            return hold(to_batch ? tbatch::space_to_batch_nd(*x, block, none)
                                 : tbatch::batch_to_space_nd(*x, block, none));
          }};
}

// Batch pad: each cloud grows by 2 rows before and after (pad {0, 0, 2, 2}), constant mode.
const std::vector<index_t> kBatchPad{0, 0, 2, 2};

using Operations = std::vector<std::pair<std::string, std::function<Workload()>>>;

/// Every operation, in the order of the report.
const Operations& operations() {
  static const Operations table{
      {"list_to_padded",
       [] {
         return list_workload(
             [](const auto& list) { return hold(tbatch::list_to_padded(list, 0.f)); });
       }},
      {"list_to_packed",
       [] {
         return list_workload([](const auto& list) { return hold(tbatch::list_to_packed(list)); });
       }},
      {"padded_to_packed",
       [] {
         return batch_workload(", padded", tbatch::list_to_padded(point_clouds(), 0.f),
                               [](const auto& b) { return tbatch::to_packed(b); });
       }},
      {"packed_to_padded",
       [] {
         return batch_workload(", packed", tbatch::list_to_packed(point_clouds()),
                               [](const auto& b) { return tbatch::to_padded(b, 0.f); });
       }},
      {"pad_constant", [] { return dense_pad(PadMode::constant); }},
      {"pad_reflect", [] { return dense_pad(PadMode::reflect); }},
      {"pad_replicate", [] { return dense_pad(PadMode::replicate); }},
      {"pad_circular", [] { return dense_pad(PadMode::circular); }},
      {"pad_symmetric", [] { return dense_pad(PadMode::symmetric); }},
      {"pad_padded_batch",
       [] {
         return batch_workload(", padded, 2 rows before and after",
                               tbatch::list_to_padded(point_clouds(), 0.f),
                               [](const auto& b) { return tbatch::pad(b, kBatchPad); });
       }},
      {"pad_packed_batch",
       [] {
         return batch_workload(", packed, 2 rows before and after",
                               tbatch::list_to_packed(point_clouds()),
                               [](const auto& b) { return tbatch::pad(b, kBatchPad); });
       }},
      {"scatter",
       [] {
         return scatter_workload(
             [](ScatterInputs& in) { return hold(tbatch::scatter(in.x, in.index, in.updates)); });
       }},
      {"scatter_add",
       [] {
         return scatter_workload([](ScatterInputs& in) {
           return hold(tbatch::scatter(in.x, in.index, in.updates, /*overwrite=*/false));
         });
       }},
      {"scatter_in_place",
       [] {
         return scatter_workload([](ScatterInputs& in) {
           tbatch::scatter_(in.x, in.index, in.updates);
           return Output{};
         });
       }},
      {"index_add",
       [] {
         return scatter_workload([](ScatterInputs& in) {
           return hold(tbatch::index_add(in.x, 0, in.index, in.updates));
         });
       }},
      {"index_add_in_place",
       [] {
         return scatter_workload([](ScatterInputs& in) {
           tbatch::index_add_(in.x, 0, in.index, in.updates);
           return Output{};
         });
       }},
      {"scatter_reduce_sum", [] { return scatter_reduce_workload(Reduce::sum); }},
      {"scatter_reduce_mean", [] { return scatter_reduce_workload(Reduce::mean); }},
      {"segment_reduce_sum", [] { return segment_workload(Reduce::sum); }},
      {"segment_reduce_mean", [] { return segment_workload(Reduce::mean); }},
      {"segment_reduce_amax", [] { return segment_workload(Reduce::amax); }},
      {"space_to_batch_nd", [] { return space_workload(true); }},
      {"batch_to_space_nd", [] { return space_workload(false); }},
  };
  return table;
}

int usage() {
  std::fprintf(stderr, "usage: footprint OPERATION [--no-cache] [--calls N] | footprint --list\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string name = argv[1];
  if (name == "--list") {
    for (const auto& entry : operations())
      std::printf("%s\n", entry.first.c_str());
    return 0;
  }
  bool buffer_cache = true;
  int calls = 2;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--no-cache")
      buffer_cache = false;
    else if (arg == "--calls" && i + 1 < argc)
      calls = std::max(1, std::atoi(argv[++i]));
    else
      return usage();
  }
  const auto found = std::find_if(operations().begin(), operations().end(),
                                  [&](const auto& entry) { return entry.first == name; });
  if (found == operations().end()) {
    std::fprintf(stderr, "footprint: unknown operation '%s' (footprint --list names them)\n",
                 name.c_str());
    return 2;
  }
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  if (!buffer_cache) tbatch::set_buffer_cache_limit(0);

  const Workload workload = found->second();
  const double before = status_bytes("VmRSS");
  const double cached_before = double(tbatch::buffer_cache_bytes());
  std::printf("op=%s workload=\"%s\" cache=%s input_mib=%.1f rss_before_mib=%.1f", name.c_str(),
              workload.description.c_str(), buffer_cache ? "on" : "off",
              workload.input_bytes / kMiB, before / kMiB);
  if (cached_before > 0) std::printf(" cached_before_mib=%.1f", cached_before / kMiB);
  for (int call = 1; call <= calls; ++call) {
    reset_peak();
    double output_bytes = 0, peak = 0;
    {
      const Output output = workload.run();
      peak = status_bytes("VmHWM");
      output_bytes = output.bytes;
    }
    const double after = status_bytes("VmRSS");
    if (call == 1) std::printf(" output_mib=%.1f", output_bytes / kMiB);
    std::printf(" increase%d_mib=%.1f hidden%d_mib=%.1f held_after%d_mib=%.1f", call,
                (peak - before) / kMiB, call, (peak - before - output_bytes) / kMiB, call,
                (after - before) / kMiB);
  }
  std::printf("\n");
  return 0;
}
