// tbatch_compare (issue 8): each workload with tbatch, with the best libtorch formulation and,
// where one exists, with Eigen Tensor, interleaved in one process, next to a memcpy of the same
// byte count (the memory limit). Prints a table of medians: peer / tbatch time ratios and
// tbatch's bandwidth as a fraction of memcpy's.
//
// Method. Every row is a set of contenders (tbatch, one or more libtorch formulations, Eigen
// Tensor, memcpy). Each contender is warmed up, then timed in `reps` rounds; in each round every
// contender takes one sample, in an order that rotates from round to round, so slow drifts of
// the machine's load hit every contender alike. A sample is the mean of enough back-to-back calls
// to last >= 2 ms (one call for the large workloads). The table shows medians over the rounds.
// Where several libtorch formulations are listed, the row reports the fastest one (by median)
// and names it.
//
// Bytes: a row's traffic is the bytes it must read plus the bytes it must write; memcpy copies
// half of that (reading and writing it), so "of memcpy" = memcpy time / tbatch time.
//
// Allocation: tbatch keeps large freed buffers for reuse (core/block_cache.hpp); libtorch's CPU
// allocator returns them to the system, and each call then pays first-touch page faults. So the
// comparison is not about allocators, the process tells glibc to keep freed memory
// (M_MMAP_MAX = 0, M_TRIM_THRESHOLD = max): every library's allocating calls then reuse memory.
// --system-malloc leaves glibc's defaults.
//
// Stores: tbatch writes outputs of streaming_stores_min_bytes() (16 MiB) or more with streaming
// stores; --streaming-min-bytes N changes that (a huge N: never), to measure what they bring.
// glibc's memcpy, the memory-limit column, streams only above its own, larger threshold.
//
// Cost curves (--curves DIR): the four conversions over the batch size and over the element
// size, and pad, scatter, segment_reduce and space_to_batch_nd over the total bytes, each point
// measured like a row (one thread), written as CSV files for make_report.sh's log-log charts.
//
// Threads: torch::set_num_threads(1) and Eigen Tensor without a thread pool, so every row is
// single-threaded, except the rows marked "2 threads" (tbatch built with TBATCH_OPENMP, and
// torch::set_num_threads(2)), which run only when tbatch has OpenMP and with --threads 2.

#include <malloc.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen_tensor.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

#include "../workloads.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using tbatch::index_t;
using tbatch::PadMode;
using tbatch::Reduce;
using tbatch::Shape;
using tbatch::Tensor;
using Clock = std::chrono::steady_clock;
using tbatch_bench::point_sets;
using tbatch_bench::random_tensor;

// ------------------------------------------------------------------ options

struct Options {
  int reps = 11;
  bool quick = false;  // smaller repetition counts (smoke test)
  bool system_malloc = false;
  int threads = 1;  // 2: also run the 2-thread rows
  std::string csv, md;
  std::vector<std::string> filters;  // --filter, repeatable: rows whose op holds any of them
  std::string curves_dir;            // set: write the cost curves there instead of the table
};
Options options;
int current_threads = 1;  // of the workload being set up (its checks run with as many threads)

void set_threads(int n) {
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  torch::set_num_threads(n);
}

// ------------------------------------------------------------------ harness

/// Keeps the optimiser from dropping a result.
template <class T>
void keep(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}
void keep_ptr(const void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

struct Contender {
  std::string name;  // "tbatch", "memcpy", "libtorch: <formulation>", "Eigen: <formulation>"
  std::function<void()> run;
};

struct Row {
  std::string op, shape;
  double bytes = 0;  // traffic: bytes read + bytes written (0: not a bandwidth row)
  bool streaming = false;
  int threads = 1;
  std::string note;
  std::function<void()> tbatch;
  std::vector<Contender> torch;  // formulations; the fastest is reported
  std::vector<Contender> eigen;
};

struct Result {
  Row row;
  double tbatch_s = 0, memcpy_s = 0;
  std::string torch_name, eigen_name;
  double torch_s = NAN, eigen_s = NAN;
  double load = 0;
};

std::vector<Result> results;

double load_average() {
  std::ifstream in("/proc/loadavg");
  double l = 0;
  in >> l;
  return l;
}

/// A large buffer pair for the memcpy baselines, mapped before use.
struct MemcpyBuffers {
  std::vector<char> src, dst;
  void ensure(std::size_t n) {
    if (src.size() < n) {
      src.assign(n, 1);
      dst.assign(n, 0);
    }
  }
};
MemcpyBuffers memcpy_buffers;

double seconds_of(const std::function<void()>& f, long calls) {
  const auto t0 = Clock::now();
  for (long i = 0; i < calls; ++i)
    f();
  const auto t1 = Clock::now();
  return std::chrono::duration<double>(t1 - t0).count() / double(calls);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Medians of interleaved rounds; with a round budget, only as many rounds (at least one) as fit
/// in it, so that the largest curve points do not take minutes.
std::vector<double> measure(const std::vector<const std::function<void()>*>& fns,
                            double round_budget_s) {
  const std::size_t n = fns.size();
  std::vector<long> calls(n, 1);
  constexpr double min_sample_s = 2e-3;
  double round_s = 0;
  for (std::size_t k = 0; k < n; ++k) {
    (*fns[k])();  // warm-up (first touch, caches, lazy init)
    const double t = seconds_of(*fns[k], 1);
    if (t < min_sample_s) {
      const double t2 = seconds_of(*fns[k], std::max(1L, long(min_sample_s / 10 / t)));
      calls[k] = std::max(1L, long(std::ceil(min_sample_s / std::max(t2, 1e-9))));
      round_s += min_sample_s;
    } else {
      round_s += t;
    }
  }
  int reps = options.quick ? std::min(options.reps, 3) : options.reps;
  if (round_s * reps > round_budget_s) reps = std::max(1, int(round_budget_s / round_s));
  std::vector<std::vector<double>> samples(n);
  for (int r = 0; r < reps; ++r)
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = (i + std::size_t(r)) % n;
      samples[k].push_back(seconds_of(*fns[k], calls[k]));
    }
  std::vector<double> medians;
  for (auto& s : samples)
    medians.push_back(median(s));
  return medians;
}

Result measure_row(Row row, double round_budget_s = INFINITY) {
  set_threads(row.threads);
  const std::size_t half = std::size_t(row.bytes / 2);
  std::function<void()> copy = [half] {
    std::memcpy(memcpy_buffers.dst.data(), memcpy_buffers.src.data(), half);
    keep_ptr(memcpy_buffers.dst.data());
  };
  if (half > 0) memcpy_buffers.ensure(half);
  std::vector<const std::function<void()>*> fns{&row.tbatch};
  for (const auto& c : row.torch)
    fns.push_back(&c.run);
  for (const auto& c : row.eigen)
    fns.push_back(&c.run);
  if (half > 0) fns.push_back(&copy);
  const double load = load_average();
  const std::vector<double> m = measure(fns, round_budget_s);
  Result res;
  res.load = load;
  res.tbatch_s = m[0];
  std::size_t k = 1;
  for (const auto& c : row.torch) {
    if (std::isnan(res.torch_s) || m[k] < res.torch_s) {
      res.torch_s = m[k];
      res.torch_name = c.name;
    }
    ++k;
  }
  for (const auto& c : row.eigen) {
    if (std::isnan(res.eigen_s) || m[k] < res.eigen_s) {
      res.eigen_s = m[k];
      res.eigen_name = c.name;
    }
    ++k;
  }
  res.memcpy_s = half > 0 ? m[k] : NAN;
  res.row = std::move(row);
  std::fprintf(
      stderr,
      "  %-34s %-30s tbatch %10.1f us  torch %10.1f us  eigen %10.1f us  memcpy %10.1f us\n",
      res.row.op.c_str(), res.row.shape.c_str(), res.tbatch_s * 1e6, res.torch_s * 1e6,
      res.eigen_s * 1e6, res.memcpy_s * 1e6);
  set_threads(current_threads);
  return res;
}

/// Whether --filter selects the row `op` (every row without a filter).
bool wanted(const std::string& op) {
  return options.filters.empty() ||
         std::any_of(options.filters.begin(), options.filters.end(),
                     [&](const std::string& f) { return op.find(f) != std::string::npos; });
}

void run_row(Row row) {
  if (!wanted(row.op)) return;
  if (row.threads > options.threads) return;
  // Rows under 1 MB measure per-call overhead, not bandwidth: no memcpy column.
  if (row.bytes < 1e6) row.bytes = 0;
  results.push_back(measure_row(std::move(row)));
}

// ------------------------------------------------------------------ checks

template <class T>
torch::Tensor to_torch(const Tensor<T>& t) {
  const Tensor<T> c = t.contiguous();
  std::vector<int64_t> sizes(c.shape().begin(), c.shape().end());
  torch::Dtype dtype = std::is_same_v<T, float>     ? torch::kFloat32
                       : std::is_same_v<T, index_t> ? torch::kInt64
                                                    : torch::kBool;
  return torch::from_blob(const_cast<T*>(c.data()), sizes, dtype).clone();
}

/// Fails loudly when tbatch's and the peer's results differ: every row compares equal work.
template <class T>
void expect_same(const std::string& what, const Tensor<T>& a, const torch::Tensor& b) {
  const torch::Tensor ta = to_torch(a);
  const bool same_shape = ta.sizes() == b.sizes();
  if (!same_shape || !torch::allclose(ta, b.to(ta.dtype()), 1e-4, 1e-5)) {
    std::cerr << "tbatch_compare: " << what << ": tbatch and libtorch results differ (shapes "
              << ta.sizes() << " and " << b.sizes() << ")\n";
    std::exit(1);
  }
}

// ------------------------------------------------------------------ workloads

std::vector<int64_t> dims_of(const Shape& s) {
  return std::vector<int64_t>(s.begin(), s.end());
}

/// A tbatch tensor's buffer seen by libtorch (no copy): both libraries read the same memory.
torch::Tensor torch_view(const Tensor<float>& t) {
  return torch::from_blob(const_cast<float*>(t.data()), dims_of(t.shape()), torch::kFloat32);
}

/// The conversion rows of one list, each handed to `sink` (the table's run_row, or a curve).
void conversions(const std::string& tag, const std::vector<Tensor<float>>& list, int threads,
                 const std::function<void(Row)>& sink = run_row) {
  namespace rnn = torch::nn::utils::rnn;
  const std::string suffix = threads > 1 ? " (2 threads)" : "";
  index_t rows = 0, max_rows = 0;
  std::vector<torch::Tensor> tlist;
  std::vector<int64_t> lengths;
  for (const auto& t : list) {
    rows += t.size(0);
    max_rows = std::max(max_rows, t.size(0));
    tlist.push_back(torch_view(t));
    lengths.push_back(t.size(0));
  }
  const index_t B = index_t(list.size()), D = list[0].size(1);
  const double valid = double(rows * D * 4), padded = double(B * max_rows * D * 4);
  const std::string shape = tag;

  // Shared inputs of the other conversions.
  const auto padded_batch = tbatch::list_to_padded(list, 0.0f);
  const auto packed_batch = tbatch::list_to_packed(list);
  const torch::Tensor tpadded = torch_view(padded_batch.data());
  const torch::Tensor tpacked = torch_view(packed_batch.data());
  const Tensor<index_t> spt = padded_batch.shape_per_tensor();
  const Tensor<index_t> first_idx = packed_batch.first_idx();

  // The best libtorch formulations, checked against tbatch once.
  auto torch_pad_sequence = [&] { return rnn::pad_sequence(tlist, true, 0.0); };
  auto torch_padded_loop = [&] {  // one allocation, fill only the padding, copy each element
    torch::Tensor out = torch::empty({B, max_rows, D});
    for (index_t i = 0; i < B; ++i) {
      out[i].narrow(0, 0, lengths[i]).copy_(tlist[i]);
      out[i].narrow(0, lengths[i], max_rows - lengths[i]).fill_(0);
    }
    return out;
  };
  auto torch_cat = [&] { return torch::cat(tlist, 0); };
  auto torch_unpad_cat = [&] {
    std::vector<torch::Tensor> parts;
    parts.reserve(std::size_t(B));
    for (index_t i = 0; i < B; ++i)
      parts.push_back(tpadded[i].narrow(0, 0, lengths[i]));
    return torch::cat(parts, 0);
  };
  auto torch_split_pad = [&] { return rnn::pad_sequence(tpacked.split_with_sizes(lengths), true); };
  auto torch_packed_loop = [&] {
    torch::Tensor out = torch::empty({B, max_rows, D});
    int64_t start = 0;
    for (index_t i = 0; i < B; ++i) {
      out[i].narrow(0, 0, lengths[i]).copy_(tpacked.narrow(0, start, lengths[i]));
      out[i].narrow(0, lengths[i], max_rows - lengths[i]).fill_(0);
      start += lengths[i];
    }
    return out;
  };
  expect_same("list_to_padded", padded_batch.data(), torch_pad_sequence());
  expect_same("list_to_padded", padded_batch.data(), torch_padded_loop());
  expect_same("list_to_packed", packed_batch.data(), torch_cat());
  expect_same("padded_to_packed", tbatch::padded_to_packed(padded_batch.data(), spt),
              torch_unpad_cat());
  expect_same("packed_to_padded",
              tbatch::packed_to_padded(packed_batch.data(), packed_batch.shape_per_tensor(),
                                       first_idx, 0.0f),
              torch_split_pad());
  expect_same("packed_to_padded", padded_batch.data(), torch_packed_loop());

  Row r;
  r.shape = shape;
  r.streaming = valid > 1e6;
  r.threads = threads;

  r.op = "list_to_padded" + suffix;
  r.bytes = valid + padded;
  r.tbatch = [&] { keep(tbatch::list_to_padded(list, 0.0f)); };
  r.torch = {{"pad_sequence(batch_first)", [&] { keep(torch_pad_sequence()); }},
             {"empty + per-element copy_/fill_", [&] { keep(torch_padded_loop()); }}};
  sink(r);

  // The same elements in buffers the caller owns (a sensor's frames, another library's
  // tensors): viewed in place, not copied into tbatch tensors first.
  std::vector<std::vector<float>> buffers;
  for (const auto& t : list)
    buffers.push_back(t.to_vector());
  auto borrowed_views = [&] {
    std::vector<tbatch::StridedView<const float>> views;
    views.reserve(buffers.size());
    for (index_t i = 0; i < B; ++i)
      views.emplace_back(buffers[std::size_t(i)].data(), tbatch::Shape{lengths[i], D});
    return views;
  };
  auto torch_from_blob_pad = [&] {
    std::vector<torch::Tensor> blobs;
    blobs.reserve(buffers.size());
    for (index_t i = 0; i < B; ++i)
      blobs.push_back(torch::from_blob(buffers[std::size_t(i)].data(), {lengths[i], D}));
    return rnn::pad_sequence(blobs, true, 0.0);
  };
  expect_same("list_to_padded from borrowed buffers",
              tbatch::list_to_padded(borrowed_views(), 0.0f).data(), torch_from_blob_pad());
  r.op = "list_to_padded from borrowed buffers" + suffix;
  r.tbatch = [&] { keep(tbatch::list_to_padded(borrowed_views(), 0.0f)); };
  r.torch = {{"from_blob + pad_sequence(batch_first)", [&] { keep(torch_from_blob_pad()); }}};
  sink(r);

  r.op = "list_to_packed" + suffix;
  r.bytes = 2 * valid;
  r.tbatch = [&] { keep(tbatch::list_to_packed(list)); };
  r.torch = {{"cat(list, 0)", [&] { keep(torch_cat()); }}};
  sink(r);

  r.op = "padded_to_packed" + suffix;
  r.bytes = 2 * valid;
  r.tbatch = [&] { keep(tbatch::padded_to_packed(padded_batch.data(), spt)); };
  r.torch = {{"cat of narrow(0, 0, n_i) views", [&] { keep(torch_unpad_cat()); }}};
  sink(r);

  r.op = "packed_to_padded" + suffix;
  r.bytes = valid + padded;
  r.tbatch = [&] {
    keep(tbatch::packed_to_padded(packed_batch.data(), packed_batch.shape_per_tensor(), first_idx,
                                  0.0f));
  };
  r.torch = {{"pad_sequence(split_with_sizes)", [&] { keep(torch_split_pad()); }},
             {"empty + per-element copy_/fill_", [&] { keep(torch_packed_loop()); }}};
  sink(r);
}

/// n indices drawn uniformly from [0, bound).
Tensor<index_t> random_index(index_t n, index_t bound, unsigned seed) {
  Tensor<index_t> index = Tensor<index_t>::empty(Shape{n});
  std::mt19937 rng(seed);
  std::uniform_int_distribution<index_t> value(0, bound - 1);
  for (index_t i = 0; i < n; ++i)
    index.data()[i] = value(rng);
  return index;
}

void pad_rows(int threads) {
  const std::string suffix = threads > 1 ? " (2 threads)" : "";
  const Shape in_shape{32, 64, 56, 56}, out_shape{32, 64, 58, 58};
  Tensor<float> x = random_tensor(in_shape, 3);
  const torch::Tensor tx = torch_view(x);
  Tensor<float> eigen_out(out_shape);
  auto in_map = tbatch::as_eigen_tensor<4>(x);
  auto out_map = tbatch::as_eigen_tensor<4>(eigen_out);
  const std::array<std::pair<Eigen::Index, Eigen::Index>, 4> paddings{
      {{0, 0}, {0, 0}, {1, 1}, {1, 1}}};
  const std::vector<index_t> pad{1, 1, 1, 1};
  namespace F = torch::nn::functional;
  struct Mode {
    const char* name;
    PadMode mode;
    std::optional<F::PadFuncOptions::mode_t> torch_mode;
  };
  const std::vector<Mode> modes{{"constant", PadMode::constant, torch::kConstant},
                                {"reflect", PadMode::reflect, torch::kReflect},
                                {"replicate", PadMode::replicate, torch::kReplicate},
                                {"circular", PadMode::circular, torch::kCircular},
                                {"symmetric", PadMode::symmetric, std::nullopt}};
  for (const Mode& m : modes) {
    Row r;
    r.op = std::string("pad ") + m.name + suffix;
    r.shape = "(32,64,56,56) f32, 1 on H,W";
    r.bytes = double(in_shape.numel() + out_shape.numel()) * 4;
    r.streaming = true;
    r.threads = threads;
    const PadMode mode = m.mode;
    r.tbatch = [&x, &pad, mode] { keep(tbatch::pad(x, pad, mode)); };
    if (m.torch_mode) {
      const auto opts = F::PadFuncOptions({1, 1, 1, 1}).mode(*m.torch_mode);
      expect_same(r.op, tbatch::pad(x, pad, mode), F::pad(tx, opts));
      r.torch = {{"nn::functional::pad", [&tx, opts] { keep(F::pad(tx, opts)); }}};
    } else {
      r.note = "torch has no symmetric mode";
    }
    if (mode == PadMode::constant && threads == 1)  // Eigen Tensor here is single-threaded
      r.eigen = {{"TensorMap::pad into preallocated", [&] {
                    out_map = in_map.pad(paddings);
                    keep_ptr(eigen_out.data());
                  }}};
    run_row(r);
    if (mode == PadMode::constant && threads == 1) {
      // Both into one preallocated output, as Eigen's assignment works: the kernels alone.
      Tensor<float> out(out_shape);
      r.op = "pad constant, into preallocated";
      r.note = "tbatch pad_into; torch has no out= pad";
      r.tbatch = [&x, &pad, &out] {
        tbatch::pad_into(x.view(), pad, out.view(), PadMode::constant);
        keep_ptr(out.data());
      };
      r.torch.clear();
      run_row(r);
    }
  }
}

void scatter_rows() {
  constexpr index_t kUpdates = 1'000'000, kRows = 100'000, kCols = 16;
  const Tensor<float> updates = random_tensor(Shape{kUpdates, kCols}, 5);
  const Tensor<index_t> unsorted_index = random_index(kUpdates, kRows, 7);
  Tensor<index_t> sorted_index = unsorted_index.clone();
  std::sort(sorted_index.data(), sorted_index.data() + kUpdates);
  const torch::Tensor tupdates = torch_view(updates);
  const double bytes = double(kUpdates * kCols * 4 + kUpdates * 8 + kRows * kCols * 4);

  for (bool sorted : {false, true}) {
    const Tensor<index_t>& index = sorted ? sorted_index : unsorted_index;
    const torch::Tensor tindex =
        torch::from_blob(const_cast<index_t*>(index.data()), {kUpdates}, torch::kInt64);
    const std::string order = sorted ? ", sorted" : ", random";
    Tensor<float> x(Shape{kRows, kCols});
    torch::Tensor tx = torch::zeros({kRows, kCols});
    const std::string shape = "1e6x16 f32 into 1e5 rows";

    // Checks: one call each from zero.
    {
      Tensor<float> a(Shape{kRows, kCols});
      torch::Tensor b = torch::zeros({kRows, kCols});
      tbatch::scatter_(a, index, updates, true);
      expect_same("scatter overwrite", a, b.index_copy_(0, tindex, tupdates));
      a = Tensor<float>(Shape{kRows, kCols}, 2.f);
      b = torch::full({kRows, kCols}, 2.f);
      tbatch::scatter_(a, index, updates, false);
      expect_same("scatter add", a, b.index_fill_(0, tindex, 0).index_add_(0, tindex, tupdates));
      a = Tensor<float>(Shape{kRows, kCols});
      b = torch::zeros({kRows, kCols});
      tbatch::index_add_(a, 0, index, updates);
      expect_same("index_add", a, b.index_add_(0, tindex, tupdates));
    }

    Row r;
    r.shape = shape;
    r.bytes = bytes;
    r.op = "scatter overwrite" + order;
    r.tbatch = [&] { keep(tbatch::scatter_(x, index, updates, true)); };
    r.torch = {{"index_copy_", [&] { keep(tx.index_copy_(0, tindex, tupdates)); }},
               {"index_put_", [&] { keep(tx.index_put_({tindex}, tupdates)); }}};
    run_row(r);

    r.op = "scatter add (overwrite=false)" + order;
    r.tbatch = [&] { keep(tbatch::scatter_(x, index, updates, false)); };
    r.torch = {{"index_fill_(0) + index_add_",
                [&] { keep(tx.index_fill_(0, tindex, 0).index_add_(0, tindex, tupdates)); }}};
    run_row(r);

    r.op = "index_add" + order;
    r.tbatch = [&] { keep(tbatch::index_add_(x, 0, index, updates)); };
    r.torch = {{"index_add_", [&] { keep(tx.index_add_(0, tindex, tupdates)); }},
               {"index_put_(accumulate)",
                [&] { keep(tx.index_put_({tindex}, tupdates, /*accumulate=*/true)); }}};
    run_row(r);
  }
}

void segment_rows() {
  constexpr index_t kRows = 1'000'000, kCols = 16, kSegments = 100'000;
  const Tensor<float> values = random_tensor(Shape{kRows, kCols}, 9);
  Tensor<index_t> first_idx = tbatch_bench::random_first_idx(kRows, kSegments, 11);
  const torch::Tensor tvalues = torch_view(values);
  const torch::Tensor toffsets = torch::from_blob(first_idx.data(), {kSegments + 1}, torch::kInt64);
  expect_same("segment_reduce sum", tbatch::segment_reduce(values, first_idx, Reduce::sum),
              torch::segment_reduce(tvalues, "sum", {}, {}, toffsets));
  struct R {
    const char* name;
    Reduce reduce;
    const char* torch_name;
  };
  for (const R& red : {R{"sum", Reduce::sum, "sum"}, R{"mean", Reduce::mean, "mean"},
                       R{"amax", Reduce::amax, "max"}}) {
    Row row;
    row.op = std::string("segment_reduce ") + red.name;
    row.shape = "1e6x16 f32, 1e5 segments";
    row.bytes = double(kRows * kCols * 4 + kSegments * kCols * 4 + (kSegments + 1) * 8);
    row.streaming = true;
    const Reduce reduce = red.reduce;
    const std::string tname = red.torch_name;
    row.tbatch = [&values, &first_idx, reduce] {
      keep(tbatch::segment_reduce(values, first_idx, reduce));
    };
    row.torch = {{"segment_reduce(offsets)", [&tvalues, &toffsets, tname] {
                    keep(torch::segment_reduce(tvalues, tname, {}, {}, toffsets));
                  }}};
    if (reduce != Reduce::sum) row.note = "empty segments: tbatch 0, torch NaN / -inf";
    run_row(row);
  }
}

// Elementwise maths (tbatch/math): a new tensor per call on every side (torch's and Eigen's
// expressions allocate their result too).
void math_rows() {
  constexpr index_t kN = 10'000'000, kSide = 4096;
  const Tensor<float> a = random_tensor(Shape{kN}, 21), b = random_tensor(Shape{kN}, 22),
                      c = random_tensor(Shape{kN}, 23);
  const torch::Tensor ta = torch_view(a), tb = torch_view(b), tc = torch_view(c);
  using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
  const Eigen::Map<const Array> ea(a.data(), kN), eb(b.data(), kN), ec(c.data(), kN);
  expect_same("a + b", a + b, ta + tb);
  expect_same("a * b + c", a * b + c, ta * tb + tc);
  const std::vector<Contender> mul_add_torch = {
      {"a * b + c", [&] { keep(ta * tb + tc); }},
      {"addcmul(c, a, b)", [&] { keep(torch::addcmul(tc, ta, tb)); }}};
  const std::vector<Contender> mul_add_eigen = {{"Array a * b + c (fused)", [&] {
                                                   Array r = ea * eb + ec;
                                                   keep(r);
                                                 }}};
  {
    Row row;
    row.op = "a + b";
    row.shape = "1e7 f32";
    row.bytes = 3.0 * kN * 4;
    row.tbatch = [&] { keep(a + b); };
    row.torch = {{"a + b", [&] { keep(ta + tb); }}};
    row.eigen = {{"Array a + b", [&] {
                    Array r = ea + eb;
                    keep(r);
                  }}};
    run_row(row);
  }
  {
    Row row;
    row.op = "a * b + c";
    row.shape = "1e7 f32";
    row.bytes = 4.0 * kN * 4;
    row.note = "tbatch evaluates eagerly: two passes";
    row.tbatch = [&] { keep(a * b + c); };
    row.torch = mul_add_torch;
    row.eigen = mul_add_eigen;
    run_row(row);
  }
  {
    Row row;
    row.op = "a * b + c fused";
    row.shape = "1e7 f32";
    row.bytes = 4.0 * kN * 4;
    row.note = "tbatch: elementwise(fn, a, b, c), one pass";
    row.tbatch = [&] {
      keep(tbatch::elementwise([](float x, float y, float z) { return x * y + z; }, a, b, c));
    };
    row.torch = mul_add_torch;
    row.eigen = mul_add_eigen;
    run_row(row);
  }
  const Tensor<float> m = random_tensor(Shape{kSide, kSide}, 24),
                      v = random_tensor(Shape{kSide}, 25);
  const torch::Tensor tm = torch_view(m), tv = torch_view(v);
  expect_same("m + v", m + v, tm + tv);
  {
    Row row;
    row.op = "a + row (broadcast)";
    row.shape = "4096x4096 + 4096 f32";
    row.bytes = 2.0 * kSide * kSide * 4 + kSide * 4;
    row.tbatch = [&] { keep(m + v); };
    row.torch = {{"m + v", [&] { keep(tm + tv); }}};
    using RowMajor = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const RowMajor> em(m.data(), kSide, kSide);
    const Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>> evec(v.data(), kSide);
    row.eigen = {{"rowwise() + v", [em, evec] {
                    RowMajor r = em.rowwise() + evec;
                    keep(r);
                  }}};
    run_row(row);
  }
  const Tensor<float> s = random_tensor(Shape{64, 64}, 26), t = random_tensor(Shape{64, 64}, 27);
  const torch::Tensor ts = torch_view(s), tt = torch_view(t);
  {
    Row row;
    row.op = "a + b (small, in cache)";
    row.shape = "64x64 f32";
    row.tbatch = [&] { keep(s + t); };
    row.torch = {{"a + b", [&] { keep(ts + tt); }}};
    const Eigen::Map<const Array> es(s.data(), 64 * 64), et(t.data(), 64 * 64);
    row.eigen = {{"Array a + b", [es, et] {
                    Array r = es + et;
                    keep(r);
                  }}};
    run_row(row);
  }
  {
    Row row;
    row.op = "exp(a)";
    row.shape = "1e7 f32";
    row.bytes = 2.0 * kN * 4;
    row.tbatch = [&] { keep(tbatch::exp(a)); };
    row.torch = {{"exp(a)", [&] { keep(torch::exp(ta)); }}};
    row.eigen = {{"Array exp()", [&] {
                    Array r = ea.exp();
                    keep(r);
                  }}};
    run_row(row);
  }
  {
    Row row;
    row.op = "where(a > 0.5, a, 0)";
    row.shape = "1e7 f32";
    row.bytes = 2.0 * kN * 4 + kN;
    row.note = "tbatch: a comparison, then where";
    row.tbatch = [&] { keep(where(a > 0.5f, a, 0.f)); };
    row.torch = {{"where(a > 0.5, a, 0)",
                  [&] { keep(torch::where(ta > 0.5f, ta, torch::zeros({}, ta.options()))); }}};
    row.eigen = {{"(a > 0.5).select(a, 0)", [&] {
                    Array r = (ea > 0.5f).select(ea, 0.f);
                    keep(r);
                  }}};
    run_row(row);
  }
}

// Reductions, softmax and matmul (tbatch/math): a new tensor per call on every side.
void reduction_rows() {
  constexpr index_t kSide = 4096, kRows = 4096, kCols = 1024, kProduct = 512;
  using RowMajor = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Tensor<float> m = random_tensor(Shape{kSide, kSide}, 31);
  const torch::Tensor tm = torch_view(m);
  const Eigen::Map<const RowMajor> em(m.data(), kSide, kSide);
  expect_same("sum(m, 1)", sum(m, 1), tm.sum(1));
  expect_same("sum(m, 0)", sum(m, 0), tm.sum(0));
  for (const index_t dim : {index_t(1), index_t(0)}) {
    Row row;
    row.op = dim == 1 ? "sum over the last dim" : "sum over the first dim";
    row.shape = "4096x4096 f32";
    row.bytes = double(kSide * kSide * 4 + kSide * 4);
    row.note = "read-only traffic: memcpy's rate is a bound for reads + writes";
    row.tbatch = [&m, dim] { keep(sum(m, dim)); };
    row.torch = {{dim == 1 ? "sum(-1)" : "sum(0)", [&tm, dim] { keep(tm.sum(dim)); }}};
    if (dim == 1)
      row.eigen = {{"rowwise().sum()", [em] {
                      Eigen::ArrayXf r = em.rowwise().sum();
                      keep(r);
                    }}};
    else
      row.eigen = {{"colwise().sum()", [em] {
                      Eigen::Array<float, 1, Eigen::Dynamic> r = em.colwise().sum();
                      keep(r);
                    }}};
    run_row(row);
  }
  const Tensor<float> scores = random_tensor(Shape{kRows, kCols}, 32);
  const torch::Tensor tscores = torch_view(scores);
  expect_same("softmax", softmax(scores, -1), torch::softmax(tscores, -1));
  auto eigen_softmax = [](const Eigen::Map<const RowMajor>& x) {
    RowMajor r = (x.colwise() - x.rowwise().maxCoeff()).exp();
    r.colwise() /= r.rowwise().sum();
    return r;
  };
  {
    Row row;
    row.op = "softmax(x, -1)";
    row.shape = "4096x1024 f32";
    row.bytes = 2.0 * kRows * kCols * 4;
    row.tbatch = [&] { keep(softmax(scores, -1)); };
    row.torch = {{"softmax(-1)", [&] { keep(torch::softmax(tscores, -1)); }}};
    const Eigen::Map<const RowMajor> ex(scores.data(), kRows, kCols);
    row.eigen = {{"exp(x - max) / sum", [ex, eigen_softmax] { keep(eigen_softmax(ex)); }}};
    run_row(row);
  }
  const Tensor<float> small = random_tensor(Shape{64, 64}, 33);
  const torch::Tensor tsmall = torch_view(small);
  {
    Row row;
    row.op = "softmax (small, in cache)";
    row.shape = "64x64 f32";
    row.tbatch = [&] { keep(softmax(small, -1)); };
    row.torch = {{"softmax(-1)", [&] { keep(torch::softmax(tsmall, -1)); }}};
    const Eigen::Map<const RowMajor> ex(small.data(), 64, 64);
    row.eigen = {{"exp(x - max) / sum", [ex, eigen_softmax] { keep(eigen_softmax(ex)); }}};
    run_row(row);
  }
  const Tensor<float> a = random_tensor(Shape{kProduct, kProduct}, 34),
                      b = random_tensor(Shape{kProduct, kProduct}, 35);
  const torch::Tensor ta = torch_view(a), tb = torch_view(b);
  expect_same("matmul", matmul(a, b), torch::matmul(ta, tb));
  {
    Row row;
    row.op = "matmul";
    row.shape = "512x512 @ 512x512 f32";
    row.tbatch = [&] { keep(matmul(a, b)); };
    row.torch = {{"matmul", [&] { keep(torch::matmul(ta, tb)); }}};
    using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const Matrix> ea(a.data(), kProduct, kProduct),
        eb(b.data(), kProduct, kProduct);
    row.eigen = {{"Matrix a * b", [ea, eb] {
                    Matrix r = ea * eb;
                    keep(r);
                  }}};
    run_row(row);
  }
}

// Maths on ragged batches (tbatch/ragged, issue 33): elementwise ops, per-element broadcasting,
// reductions and softmax along the ragged dim of packed and padded batches of (L_i, D) elements.
// libtorch gets the packed (total rows, D) tensor, the padded (B, L_max, D) tensor with its mask
// (B, L_max, 1) and its inverse (metadata, built once, as tbatch's shape_per_tensor), the
// lengths, the segment id of each packed row and, where 1.13 runs the op, a nested tensor of
// the list. A new result per call on every side. Traffic: the elements' values read, the result
// written (a padded result's padding included: tbatch writes it as 0), a (B, D) operand or
// result, and the lengths (B x 8 bytes) a reduction reads.
void ragged_rows(const std::string& tag, const std::vector<Tensor<float>>& list) {
  const index_t B = index_t(list.size()), D = list[0].size(1);
  index_t rows = 0, max_rows = 0;
  std::vector<int64_t> lengths;
  std::vector<torch::Tensor> tlist;
  for (const auto& t : list) {
    rows += t.size(0);
    max_rows = std::max(max_rows, t.size(0));
    lengths.push_back(t.size(0));
    tlist.push_back(torch_view(t));
  }
  const tbatch::PackedBatch<float> packed = tbatch::list_to_packed(list);
  const tbatch::PaddedBatch<float> padded = tbatch::list_to_padded(list, 0.0f);
  const Tensor<float> dense = random_tensor(Shape{B, D}, 61);  // slot i pairs with element i
  const Tensor<index_t> seg = tbatch::segment_ids(packed);
  const torch::Tensor tpacked = torch_view(packed.data()), tpadded = torch_view(padded.data()),
                      tdense = torch_view(dense);
  const torch::Tensor tlengths = torch::from_blob(lengths.data(), {B}, torch::kInt64);
  const torch::Tensor tcounts = tlengths.to(torch::kFloat32).unsqueeze(1);
  const torch::Tensor tseg =
      torch::from_blob(const_cast<index_t*>(seg.data()), {rows}, torch::kInt64);
  const torch::Tensor mask =
      (torch::arange(max_rows).unsqueeze(0) < tlengths.unsqueeze(1)).unsqueeze(-1);
  const torch::Tensor not_mask = ~mask, mask_f = mask.to(torch::kFloat32);
  const torch::Tensor nested = torch::nested::nested_tensor(tlist);
  // The second operand of `p + q`: the same shapes, other values, other buffers.
  const tbatch::PackedBatch<float> packed_q = packed.with_data(packed.data() * 0.5f);
  const tbatch::PaddedBatch<float> padded_q = padded.with_data(padded.data() * 0.5f);
  const torch::Tensor tpacked_q = torch_view(packed_q.data()),
                      tpadded_q = torch_view(padded_q.data()), nested_q = nested * 0.5;
  const float inf = std::numeric_limits<float>::infinity();
  const double valid = double(rows * D * 4), padded_bytes = double(B * max_rows * D * 4),
               slots = double(B * D * 4), counts = double(B * 8);

  // Each formulation is checked against tbatch's result once, then timed; with `rows_only`,
  // on the elements' rows only (the formulation leaves something else than 0 in the padding).
  using Formulation = std::pair<std::string, std::function<torch::Tensor()>>;
  auto checked = [&](const std::string& what, const Tensor<float>& expected,
                     const std::vector<Formulation>& forms, bool rows_only = false) {
    std::vector<Contender> contenders;
    for (const auto& [name, form] : forms) {
      const torch::Tensor result = form();
      expect_same(what + ": " + name, expected,
                  rows_only ? result.masked_fill(not_mask, 0) : result);
      contenders.push_back({name, [f = form] { keep(f()); }});
    }
    return contenders;
  };
  // Nested results are compared as padded tensors, with tbatch's padded result.
  auto checked_nested = [&](const std::string& what, const Tensor<float>& expected,
                            const Formulation& form) {
    expect_same(what + ": " + form.first, expected, form.second().to_padded_tensor(0));
    return Contender{form.first, [f = form.second] { keep(f()); }};
  };
  auto packed_loop = [&](const auto& write) {  // write(out_i, x_i, i) on each element's rows
    torch::Tensor out = torch::empty({rows, D});
    int64_t start = 0;
    for (index_t i = 0; i < B; ++i) {
      write(out.narrow(0, start, lengths[i]), tpacked.narrow(0, start, lengths[i]), i);
      start += lengths[i];
    }
    return out;
  };

  Row r;
  r.shape = tag;
  r.streaming = true;
  r.op = "ragged exp(p), packed";
  r.bytes = 2 * valid;
  r.note = "nested_tensor: no exp in 1.13";
  r.tbatch = [&] { keep(tbatch::exp(packed)); };
  r.torch = checked(r.op, tbatch::exp(packed).data(),
                    {{"exp(packed)", [&] { return torch::exp(tpacked); }}});
  run_row(r);
  r.note.clear();
  r.op = "ragged exp(p), padded";
  r.bytes = valid + padded_bytes;
  r.tbatch = [&] { keep(tbatch::exp(padded)); };
  r.torch = checked(r.op, tbatch::exp(padded).data(),
                    {{"exp(padded), padding exp(0) = 1", [&] { return torch::exp(tpadded); }},
                     {"exp(padded).masked_fill_(~mask, 0)",
                      [&] { return torch::exp(tpadded).masked_fill_(not_mask, 0); }}},
                    true);
  run_row(r);

  r.op = "ragged p + q, packed";
  r.bytes = 3 * valid;
  r.tbatch = [&] { keep(packed + packed_q); };
  r.torch = checked(r.op, (packed + packed_q).data(),
                    {{"packed + packed_q", [&] { return tpacked + tpacked_q; }}});
  r.torch.push_back(checked_nested(r.op, (padded + padded_q).data(),
                                   {"nested + nested_q", [&] { return nested + nested_q; }}));
  run_row(r);
  r.op = "ragged p + q, padded";
  r.bytes = 2 * valid + padded_bytes;
  r.tbatch = [&] { keep(padded + padded_q); };
  r.torch = checked(r.op, (padded + padded_q).data(),
                    {{"padded + padded_q", [&] { return tpadded + tpadded_q; }}});
  run_row(r);

  r.op = "ragged p - dense (B,D), packed";
  r.bytes = 2 * valid + slots;
  r.tbatch = [&] { keep(packed - dense); };
  r.torch = checked(r.op, (packed - dense).data(),
                    {{"packed - dense.index_select(0, segment ids)",
                      [&] { return tpacked - tdense.index_select(0, tseg); }},
                     {"packed - dense.repeat_interleave(lengths)",
                      [&] { return tpacked - tdense.repeat_interleave(tlengths, 0, rows); }},
                     {"per element sub_out(out_i, x_i, dense[i])", [&] {
                        return packed_loop([&](torch::Tensor o, const torch::Tensor& x, index_t i) {
                          torch::sub_out(o, x, tdense[i]);
                        });
                      }}});
  run_row(r);
  r.op = "ragged p - dense (B,D), padded";
  r.bytes = valid + padded_bytes + slots;
  r.tbatch = [&] { keep(padded - dense); };
  r.torch = checked(r.op, (padded - dense).data(),
                    {{"padded - dense.unsqueeze(1), padding -dense",
                      [&] { return tpadded - tdense.unsqueeze(1); }},
                     {"(padded - dense.unsqueeze(1)).masked_fill_(~mask, 0)",
                      [&] { return (tpadded - tdense.unsqueeze(1)).masked_fill_(not_mask, 0); }}},
                    true);
  run_row(r);

  // Reductions along the ragged dim: read-only traffic, as the tensor sums'.
  r.note = "read-only traffic: memcpy's rate is a bound for reads + writes";
  r.bytes = valid + slots + counts;
  r.op = "ragged sum(p, 0), packed";
  r.tbatch = [&] { keep(Tensor<float>(tbatch::sum(packed, 0))); };
  r.torch = checked(r.op, tbatch::sum(packed, 0),
                    {{"segment_reduce(sum, lengths)",
                      [&] { return torch::segment_reduce(tpacked, "sum", tlengths); }},
                     {"zeros.index_add_(0, segment ids, packed)", [&] {
                        return torch::zeros({B, D}).index_add_(0, tseg, tpacked);
                      }}});
  run_row(r);
  r.op = "ragged sum(p, 0), padded";
  r.tbatch = [&] { keep(Tensor<float>(tbatch::sum(padded, 0))); };
  r.torch = checked(r.op, tbatch::sum(padded, 0),
                    {{"(padded * mask).sum(1)", [&] { return (tpadded * mask_f).sum(1); }},
                     {"padded.masked_fill(~mask, 0).sum(1)",
                      [&] { return tpadded.masked_fill(not_mask, 0).sum(1); }},
                     {"padded.sum(1), padding known to be 0", [&] { return tpadded.sum(1); }}});
  run_row(r);

  r.op = "ragged mean(p, 0), packed";
  r.tbatch = [&] { keep(Tensor<float>(tbatch::mean(packed, 0))); };
  r.torch = checked(r.op, tbatch::mean(packed, 0),
                    {{"segment_reduce(mean, lengths)",
                      [&] { return torch::segment_reduce(tpacked, "mean", tlengths); }},
                     {"zeros.index_add_(0, segment ids, packed) / lengths", [&] {
                        return torch::zeros({B, D}).index_add_(0, tseg, tpacked).div_(tcounts);
                      }}});
  run_row(r);
  r.op = "ragged mean(p, 0), padded";
  r.tbatch = [&] { keep(Tensor<float>(tbatch::mean(padded, 0))); };
  r.torch = checked(r.op, tbatch::mean(padded, 0),
                    {{"(padded * mask).sum(1) / lengths",
                      [&] { return (tpadded * mask_f).sum(1).div_(tcounts); }},
                     {"padded.masked_fill(~mask, 0).sum(1) / lengths",
                      [&] { return tpadded.masked_fill(not_mask, 0).sum(1).div_(tcounts); }},
                     {"padded.sum(1) / lengths, padding known to be 0",
                      [&] { return tpadded.sum(1).div_(tcounts); }}});
  run_row(r);

  r.op = "ragged amax(p, 0), packed";
  r.tbatch = [&] { keep(Tensor<float>(tbatch::amax(packed, 0))); };
  r.torch = checked(r.op, tbatch::amax(packed, 0),
                    {{"segment_reduce(max, lengths)",
                      [&] { return torch::segment_reduce(tpacked, "max", tlengths); }},
                     {"empty.index_reduce_(0, segment ids, packed, amax)", [&] {
                        return torch::empty({B, D}).index_reduce_(0, tseg, tpacked, "amax", false);
                      }}});
  run_row(r);
  r.op = "ragged amax(p, 0), padded";
  r.tbatch = [&] { keep(Tensor<float>(tbatch::amax(padded, 0))); };
  r.torch = checked(r.op, tbatch::amax(padded, 0),
                    {{"padded.masked_fill(~mask, -inf).amax(1)",
                      [&] { return tpadded.masked_fill(not_mask, -inf).amax(1); }}});
  run_row(r);
  r.note.clear();

  r.op = "ragged softmax(p, 0), packed";
  r.bytes = 2 * valid;
  r.tbatch = [&] { keep(tbatch::softmax(packed, 0)); };
  r.torch = checked(
      r.op, tbatch::softmax(packed, 0).data(),
      {{"exp(x - segment max) / segment sum",
        [&] {
          torch::Tensor e =
              (tpacked - torch::segment_reduce(tpacked, "max", tlengths).index_select(0, tseg))
                  .exp_();
          return e.div_(torch::segment_reduce(e, "sum", tlengths).index_select(0, tseg));
        }},
       {"per element _softmax_out(out_i, x_i, 0)", [&] {
          return packed_loop([](torch::Tensor o, const torch::Tensor& x, index_t) {
            at::_softmax_out(o, x, 0, false);
          });
        }}});
  r.torch.push_back(
      checked_nested(r.op, tbatch::softmax(padded, 0).data(),
                     {"softmax(nested, 1)", [&] { return torch::softmax(nested, 1); }}));
  run_row(r);
  r.op = "ragged softmax(p, 0), padded";
  r.bytes = valid + padded_bytes;
  r.tbatch = [&] { keep(tbatch::softmax(padded, 0)); };
  r.torch = checked(r.op, tbatch::softmax(padded, 0).data(),
                    {{"padded.masked_fill(~mask, -inf).softmax(1)",
                      [&] { return tpadded.masked_fill(not_mask, -inf).softmax(1); }}});
  run_row(r);
}

// Jagged products and selection on ragged batches (tbatch/ragged/bmm.hpp and selection.hpp,
// issue 33): jagged_dense_bmm, jagged_jagged_bmm and the dense (B, H, L_max) times packed
// product, masked_select by `packed > 0` and index_select of a permutation of the elements.
// libtorch gets the packed tensors, the padded (B, L_max, K) tensors (padding 0), the lengths,
// offsets and segment ids, and nested tensors of the elements, all built once. The Eigen column
// of a product row is one GEMM of the same multiply-adds on dense matrices (C.noalias() = A * W
// into a preallocated C): the rate a grouped product could reach, not the same op. Traffic: the
// operands read (of a dense (B, H, L_max) operand its first L_i columns), the result written;
// masked_select: the values read and the selected values written; index_select: the values
// read and written.
void jagged_rows(const std::string& tag, const std::vector<Tensor<float>>& list, unsigned seed) {
  const index_t B = index_t(list.size()), K = list[0].size(1), N = K, H = 8;
  std::vector<int64_t> lengths, starts;
  std::vector<torch::Tensor> tlist;
  index_t rows = 0, max_rows = 0;
  for (const auto& t : list) {
    starts.push_back(rows);
    lengths.push_back(t.size(0));
    rows += t.size(0);
    max_rows = std::max(max_rows, t.size(0));
    tlist.push_back(torch_view(t));
  }
  const tbatch::PackedBatch<float> packed = tbatch::list_to_packed(list);
  // jagged_jagged's second operand: other values, the same lengths
  const tbatch::PackedBatch<float> other(random_tensor(Shape{rows, N}, seed + 1),
                                         packed.shape_per_tensor(), packed.first_idx());
  const Tensor<float> slots = random_tensor(Shape{B, K, N}, seed + 2);           // bmm(p, slots)
  const Tensor<float> weights = random_tensor(Shape{B, H, max_rows}, seed + 3);  // bmm(weights, p)
  const Tensor<float> padded = tbatch::to_padded(packed, 0.0f).data();
  const Tensor<float> padded_other = tbatch::to_padded(other, 0.0f).data();
  const Tensor<index_t> seg = tbatch::segment_ids(packed);
  std::vector<index_t> permutation(static_cast<std::size_t>(B));
  std::iota(permutation.begin(), permutation.end(), index_t(0));
  std::shuffle(permutation.begin(), permutation.end(), std::mt19937(seed + 4));
  const Tensor<index_t> perm(Shape{B}, permutation);
  const torch::Tensor tpacked = torch_view(packed.data()), tother = torch_view(other.data()),
                      tslots = torch_view(slots), tweights = torch_view(weights),
                      tpadded = torch_view(padded), tpadded_other = torch_view(padded_other);
  const torch::Tensor tlengths = torch::from_blob(lengths.data(), {B}, torch::kInt64);
  const torch::Tensor tstarts = torch::from_blob(starts.data(), {B}, torch::kInt64);
  const torch::Tensor tends = tstarts + tlengths - 1;
  const torch::Tensor tseg =
      torch::from_blob(const_cast<index_t*>(seg.data()), {rows}, torch::kInt64);
  const torch::Tensor tperm =
      torch::from_blob(const_cast<index_t*>(perm.data()), {B}, torch::kInt64);
  const torch::Tensor mask =
      (torch::arange(max_rows).unsqueeze(0) < tlengths.unsqueeze(1)).unsqueeze(-1);
  auto element = [&](const torch::Tensor& t, index_t i) {  // element i's rows of a packed tensor
    return t.narrow(0, starts[std::size_t(i)], lengths[std::size_t(i)]);
  };

  // Each formulation is checked against tbatch's results once (after as_expected, if given),
  // then timed; one that libtorch 1.13 does not run (c10::Error) is left out, said on stderr.
  using Outputs = std::vector<torch::Tensor>;
  struct Form {
    std::string name;
    std::function<Outputs()> run;
    std::function<Outputs(Outputs)> as_expected;
  };
  auto checked = [&](const std::string& what, const std::vector<Tensor<float>>& expected,
                     const std::vector<Form>& forms) {
    std::vector<Contender> contenders;
    for (const Form& form : forms) {
      Outputs got;
      try {
        got = form.run();
      } catch (const c10::Error& e) {
        std::cerr << "tbatch_compare: " << what << ": " << form.name << " left out (libtorch: "
                  << std::string(e.what_without_backtrace()).substr(0, 100) << ")\n";
        continue;
      }
      if (form.as_expected) got = form.as_expected(got);
      for (std::size_t k = 0; k < expected.size(); ++k)
        expect_same(what + ": " + form.name, expected[k], got.at(k));
      contenders.push_back({form.name, [f = form.run] { keep(f()); }});
    }
    return contenders;
  };
  // A padded (B, L_max, N) result's valid rows, in packed order; a nested result padded.
  const auto valid_rows = [&](Outputs t) {
    return Outputs{t[0].masked_select(mask).reshape({rows, t[0].size(2)})};
  };
  const auto nested_rows = [&](Outputs t) { return valid_rows({t[0].to_padded_tensor(0)}); };
  const auto nested_padded = [](Outputs t) { return Outputs{t[0].to_padded_tensor(0)}; };
  auto nested_of = [&](const std::function<torch::Tensor(index_t)>& part) {
    std::vector<torch::Tensor> parts;
    for (index_t i = 0; i < B; ++i)
      parts.push_back(part(i));
    return torch::nested::nested_tensor(parts);
  };

  // The same multiply-adds as one dense GEMM: Eigen's default column-major MatrixXf and the
  // row-major matrices of the packed data (the faster is reported).
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Tensor<float> w = random_tensor(Shape{K, N}, seed + 5),
                      h = random_tensor(Shape{H, rows}, seed + 6);
  const RowMatrix row_a = Eigen::Map<const RowMatrix>(packed.data().data(), rows, K),
                  row_c = Eigen::Map<const RowMatrix>(other.data().data(), rows, N),
                  row_w = Eigen::Map<const RowMatrix>(w.data(), K, N),
                  row_h = Eigen::Map<const RowMatrix>(h.data(), H, rows);
  const Eigen::MatrixXf col_a = row_a, col_c = row_c, col_w = row_w, col_h = row_h;
  Eigen::MatrixXf col_out;
  RowMatrix row_out;
  // fn(out, a, b) computes out = a op b; a pair of contenders, one per layout
  auto gemms = [&](const std::string& name, const auto& fn, const auto& pick) {
    const auto [ca, cb] = pick(col_a, col_c, col_w, col_h);
    const auto [ra, rb] = pick(row_a, row_c, row_w, row_h);
    fn(col_out, *ca, *cb);  // sizes the results outside the timed calls
    fn(row_out, *ra, *rb);
    return std::vector<Contender>{{name + ", MatrixXf",
                                   [&, fn, ca = ca, cb = cb] {
                                     fn(col_out, *ca, *cb);
                                     keep_ptr(col_out.data());
                                   }},
                                  {name + ", row-major", [&, fn, ra = ra, rb = rb] {
                                     fn(row_out, *ra, *rb);
                                     keep_ptr(row_out.data());
                                   }}};
  };
  const auto product = [](auto& out, const auto& a, const auto& b) { out.noalias() = a * b; };

  const double values = double(rows * K * 4), dense_slots = double(B * K * N * 4);

  // jagged_dense_bmm: (L_i, K) @ slots[i] (K, N) -> packed (L_i, N)
  if (const std::string op = "ragged bmm(p, dense (B,K,N)) -> packed"; wanted(op)) {
    const torch::Tensor nested = torch::nested::nested_tensor(tlist);
    const torch::Tensor nested_slots = nested_of([&](index_t i) { return tslots[i]; });
    Row r;
    r.shape = tag;
    r.op = op;
    r.bytes = 2 * values + dense_slots;
    r.tbatch = [&] { keep(tbatch::bmm(packed, slots)); };
    r.torch = checked(r.op, {tbatch::bmm(packed, slots).data()},
                      {{"per element mm_out(out_i, x_i, b[i])",
                        [&] {
                          torch::Tensor out = torch::empty({rows, N});
                          for (index_t i = 0; i < B; ++i) {
                            torch::Tensor o = element(out, i);
                            torch::mm_out(o, element(tpacked, i), tslots[i]);
                          }
                          return Outputs{out};
                        },
                        {}},
                       {"bmm(padded, b), padding 0",
                        [&] { return Outputs{torch::bmm(tpadded, tslots)}; }, valid_rows},
                       {"bmm(nested, nested b)",
                        [&] { return Outputs{torch::bmm(nested, nested_slots)}; }, nested_rows}});
    r.eigen = gemms("one GEMM (rows,K) x (K,N)", product,
                    [](const auto& a, const auto&, const auto& w, const auto&) {
                      return std::pair{&a, &w};
                    });
    run_row(r);
  }

  // jagged_jagged_bmm: (L_i, K)^T @ (L_i, N) -> dense (B, K, N)
  if (const std::string op = "ragged bmm(transpose(p), p) -> (B,K,N)"; wanted(op)) {
    const torch::Tensor nested_t = nested_of([&](index_t i) { return element(tpacked, i).t(); });
    const torch::Tensor nested_other = nested_of([&](index_t i) { return element(tother, i); });
    Row r;
    r.shape = tag;
    r.op = op;
    r.bytes = values + double(rows * N * 4) + dense_slots;
    r.tbatch = [&] { keep(tbatch::bmm(tbatch::transpose(packed), other)); };
    r.torch =
        checked(r.op, {tbatch::bmm(tbatch::transpose(packed), other)},
                {{"per element mm_out(out[i], x_i.t(), y_i)",
                  [&] {
                    torch::Tensor out = torch::empty({B, K, N});
                    for (index_t i = 0; i < B; ++i) {
                      torch::Tensor o = out[i];
                      torch::mm_out(o, element(tpacked, i).t(), element(tother, i));
                    }
                    return Outputs{out};
                  },
                  {}},
                 {"bmm(padded.transpose(1,2), padded y), padding 0",
                  [&] { return Outputs{torch::bmm(tpadded.transpose(1, 2), tpadded_other)}; },
                  {}},
                 {"bmm(nested of x_i.t(), nested y)",
                  [&] { return Outputs{torch::bmm(nested_t, nested_other)}; }, nested_padded}});
    r.eigen = gemms(
        "one GEMM (K,rows) x (rows,N)",
        [](auto& out, const auto& a, const auto& c) { out.noalias() = a.transpose() * c; },
        [](const auto& a, const auto& c, const auto&, const auto&) {
          return std::pair{&a, &c};
        });
    run_row(r);
  }

  // batched_dense_vec_jagged_2d_mul: weights[i] (H, L_max), its first L_i columns, @ (L_i, N)
  if (const std::string op = "ragged bmm(dense (B,8,L_max), p) -> (B,8,N)"; wanted(op)) {
    const torch::Tensor nested = torch::nested::nested_tensor(tlist);
    const torch::Tensor nested_weights =
        nested_of([&](index_t i) { return tweights[i].narrow(1, 0, lengths[std::size_t(i)]); });
    Row r;
    r.shape = tag;
    r.op = op;
    r.bytes = double(H * rows * 4) + values + double(B * H * N * 4);
    r.tbatch = [&] { keep(tbatch::bmm(weights, packed)); };
    r.torch = checked(
        r.op, {tbatch::bmm(weights, packed)},
        {{"per element mm_out(out[i], d[i].narrow(1, 0, L_i), x_i)",
          [&] {
            torch::Tensor out = torch::empty({B, H, N});
            for (index_t i = 0; i < B; ++i) {
              torch::Tensor o = out[i];
              torch::mm_out(o, tweights[i].narrow(1, 0, lengths[std::size_t(i)]),
                            element(tpacked, i));
            }
            return Outputs{out};
          },
          {}},
         {"bmm(d, padded), padding 0", [&] { return Outputs{torch::bmm(tweights, tpadded)}; }, {}},
         {"bmm(nested d_i, nested)", [&] { return Outputs{torch::bmm(nested_weights, nested)}; },
          nested_padded}});
    r.eigen = gemms("one GEMM (8,rows) x (rows,N)", product,
                    [](const auto& a, const auto&, const auto&, const auto& h) {
                      return std::pair{&h, &a};
                    });
    run_row(r);
  }

  // masked_select(p, p > 0): each element's positive entries, (n_i, 1), and their counts
  if (const std::string op = "ragged masked_select(p, p > 0)"; wanted(op)) {
    const tbatch::PackedBatch<float> selected = tbatch::masked_select(packed, packed > 0.f);
    const index_t kept = selected.data().size(0);
    const std::vector<Tensor<float>> expected{
        selected.data().reshape({kept}), selected.shape_per_tensor().cast<float>().reshape({B})};
    Row r;
    r.shape = tag;
    r.op = op;
    r.bytes = values + double(kept * 4);
    r.tbatch = [&] { keep(tbatch::masked_select(packed, packed > 0.f)); };
    r.torch = checked(
        r.op, expected,
        {{"masked_select(packed, packed > 0); counts zeros.index_add_(segment ids, m.sum(1))",
          [&] {
            const torch::Tensor m = tpacked > 0;
            return Outputs{torch::masked_select(tpacked, m),
                           torch::zeros({B}, torch::kInt64).index_add_(0, tseg, m.sum(1))};
          },
          {}},
         {"masked_select(packed, packed > 0); counts segment_reduce(m.sum(1), lengths)",
          [&] {
            const torch::Tensor m = tpacked > 0;
            return Outputs{torch::masked_select(tpacked, m),
                           torch::segment_reduce(m.sum(1).to(torch::kFloat32), "sum", tlengths)};
          },
          {}},
         {"masked_select(packed, packed > 0); counts diff(m.sum(1).cumsum(0)[ends])",
          [&] {
            const torch::Tensor m = tpacked > 0;
            return Outputs{torch::masked_select(tpacked, m),
                           torch::diff(m.sum(1).cumsum(0).index_select(0, tends), 1, 0,
                                       torch::zeros({1}, torch::kInt64))};
          },
          {}}});
    run_row(r);
  }

  // index_select(p, permutation of the elements): the data copied once, with its metadata
  if (const std::string op = "ragged index_select(p, permutation)"; wanted(op)) {
    const tbatch::PackedBatch<float> picked = tbatch::index_select(packed, perm);
    const std::vector<Tensor<float>> expected{picked.data(),
                                              picked.shape_per_tensor().cast<float>().reshape({B})};
    auto row_index = [&](const torch::Tensor& lens) {  // the source row of each result row
      const torch::Tensor shift = tstarts.index_select(0, tperm) - (lens.cumsum(0) - lens);
      return torch::repeat_interleave(shift, lens, 0, rows) + torch::arange(rows);
    };
    Row r;
    r.shape = tag;
    r.op = op;
    r.bytes = 2 * values;
    r.tbatch = [&] { keep(tbatch::index_select(packed, perm)); };
    r.torch = checked(r.op, expected,
                      {{"packed.index_select(0, rows), rows by repeat_interleave(offsets)",
                        [&] {
                          const torch::Tensor lens = tlengths.index_select(0, tperm);
                          return Outputs{tpacked.index_select(0, row_index(lens)), lens};
                        },
                        {}},
                       {"packed.index({rows}), rows by repeat_interleave(offsets)",
                        [&] {
                          const torch::Tensor lens = tlengths.index_select(0, tperm);
                          return Outputs{tpacked.index({row_index(lens)}), lens};
                        },
                        {}},
                       {"cat of the elements' narrow() views",
                        [&] {
                          std::vector<torch::Tensor> parts;
                          parts.reserve(std::size_t(B));
                          for (index_t k = 0; k < B; ++k)
                            parts.push_back(element(tpacked, permutation[std::size_t(k)]));
                          return Outputs{torch::cat(parts), tlengths.index_select(0, tperm)};
                        },
                        {}}});
    run_row(r);
  }
}

void space_to_batch_rows(int threads) {
  const std::string suffix = threads > 1 ? " (2 threads)" : "";
  const Shape in_shape{8, 224, 224, 64};
  const std::vector<index_t> block{2, 2};
  const std::vector<std::array<index_t, 2>> none{{0, 0}, {0, 0}};
  const Tensor<float> x = random_tensor(in_shape, 13);
  const Tensor<float> y = tbatch::space_to_batch_nd(x, block, none);
  const torch::Tensor tx = torch_view(x), ty = torch_view(y);
  auto torch_s2b = [&] {
    return tx.reshape({8, 112, 2, 112, 2, 64})
        .permute({2, 4, 0, 1, 3, 5})
        .contiguous()
        .reshape({32, 112, 112, 64});
  };
  auto torch_b2s = [&] {
    return ty.reshape({2, 2, 8, 112, 112, 64})
        .permute({2, 3, 0, 4, 1, 5})
        .contiguous()
        .reshape({8, 224, 224, 64});
  };
  torch::Tensor s2b_out = torch::empty({32, 112, 112, 64});
  torch::Tensor b2s_out = torch::empty({8, 224, 224, 64});
  expect_same("space_to_batch_nd", y, torch_s2b());
  expect_same("batch_to_space_nd", tbatch::batch_to_space_nd(y, block, none), torch_b2s());
  expect_same("space_to_batch_nd", y,
              s2b_out.view({2, 2, 8, 112, 112, 64})
                  .copy_(tx.reshape({8, 112, 2, 112, 2, 64}).permute({2, 4, 0, 1, 3, 5}))
                  .view({32, 112, 112, 64}));

  using Map4 = Eigen::TensorMap<Eigen::Tensor<const float, 4, Eigen::RowMajor>>;
  using Map6 = Eigen::TensorMap<Eigen::Tensor<float, 6, Eigen::RowMajor>>;
  using CMap6 = Eigen::TensorMap<Eigen::Tensor<const float, 6, Eigen::RowMajor>>;
  Tensor<float> eigen_out(in_shape);
  const Map4 ein(x.data(), 8, 224, 224, 64);
  const CMap6 ey(y.data(), 2, 2, 8, 112, 112, 64);
  Map6 s2b_res(eigen_out.data(), 2, 2, 8, 112, 112, 64);
  Map6 b2s_res(eigen_out.data(), 8, 112, 2, 112, 2, 64);
  const std::array<Eigen::Index, 6> split{8, 112, 2, 112, 2, 64};
  const std::array<int, 6> s2b_order{2, 4, 0, 1, 3, 5}, b2s_order{2, 3, 0, 4, 1, 5};
  s2b_res = ein.reshape(split).shuffle(s2b_order);
  if (!equal(eigen_out.reshape({32, 112, 112, 64}), y)) {
    std::cerr << "tbatch_compare: Eigen space-to-batch differs\n";
    std::exit(1);
  }

  Row r;
  r.shape = "(8,224,224,64) f32, block 2x2";
  r.bytes = 2.0 * double(in_shape.numel()) * 4;
  r.streaming = true;
  r.threads = threads;
  r.op = "space_to_batch_nd" + suffix;
  r.tbatch = [&] { keep(tbatch::space_to_batch_nd(x, block, none)); };
  r.torch = {{"reshape/permute/contiguous", [&] { keep(torch_s2b()); }},
             {"copy_ of permuted view into preallocated", [&] {
                keep(s2b_out.view({2, 2, 8, 112, 112, 64})
                         .copy_(tx.reshape({8, 112, 2, 112, 2, 64}).permute({2, 4, 0, 1, 3, 5})));
              }}};
  if (threads == 1)  // Eigen Tensor here is single-threaded
    r.eigen = {{"reshape().shuffle() into preallocated", [&] {
                  s2b_res = ein.reshape(split).shuffle(s2b_order);
                  keep_ptr(eigen_out.data());
                }}};
  run_row(r);

  r.op = "batch_to_space_nd" + suffix;
  r.tbatch = [&] { keep(tbatch::batch_to_space_nd(y, block, none)); };
  r.torch = {{"reshape/permute/contiguous", [&] { keep(torch_b2s()); }},
             {"copy_ of permuted view into preallocated", [&] {
                keep(b2s_out.view({8, 112, 2, 112, 2, 64})
                         .copy_(ty.reshape({2, 2, 8, 112, 112, 64}).permute({2, 3, 0, 4, 1, 5})));
              }}};
  if (threads == 1)
    r.eigen = {{"shuffle() into preallocated", [&] {
                  b2s_res = ey.shuffle(b2s_order);
                  keep_ptr(eigen_out.data());
                }}};
  run_row(r);
}

void tensordict_rows() {
  using tbatch::Slice;
  using tbatch::TensorDict;
  constexpr index_t kBatch = 256;
  // A replay-buffer-like record: four entries sharing the batch dim.
  auto make_td = [](unsigned seed) {
    TensorDict td(Shape{kBatch});
    td.set("obs", random_tensor(Shape{kBatch, 64}, seed));
    td.set("action", random_tensor(Shape{kBatch, 8}, seed + 1));
    td.set("reward", random_tensor(Shape{kBatch}, seed + 2));
    td.set("step", Tensor<index_t>::arange(kBatch));
    return td;
  };
  using TorchDict = std::vector<std::pair<std::string, torch::Tensor>>;
  auto to_torch_dict = [](const TensorDict& td) {
    TorchDict d;
    for (const std::string& key : {"obs", "action", "reward"})
      d.emplace_back(key, to_torch(td.get<float>(key)));
    d.emplace_back("step", to_torch(td.get<index_t>("step")));
    return d;
  };
  const TensorDict td = make_td(21);
  const TorchDict tdict = to_torch_dict(td);
  std::vector<TensorDict> tds;
  std::vector<TorchDict> tdicts;
  for (unsigned i = 0; i < 8; ++i) {
    tds.push_back(make_td(100 + 10 * i));
    tdicts.push_back(to_torch_dict(tds.back()));
  }
  const std::string note = "torch: per-key loop over a vector<pair<string, Tensor>>";
  Row r;
  r.note = note;
  r.shape = "batch [256], 4 keys";
  r.op = "TensorDict index [5]";
  r.tbatch = [&] { keep(td.index({5})); };
  r.torch = {{"per-key select(0, 5)", [&] {
                TorchDict out;
                out.reserve(tdict.size());
                for (const auto& [k, t] : tdict)
                  out.emplace_back(k, t.select(0, 5));
                keep(out);
              }}};
  run_row(r);

  r.op = "TensorDict index [0:128]";
  r.tbatch = [&] { keep(td.index({Slice{0, 128}})); };
  r.torch = {{"per-key slice(0, 0, 128)", [&] {
                TorchDict out;
                out.reserve(tdict.size());
                for (const auto& [k, t] : tdict)
                  out.emplace_back(k, t.slice(0, 0, 128));
                keep(out);
              }}};
  run_row(r);

  expect_same("TensorDict stack", TensorDict::stack(tds).get<float>("obs"), [&] {
    std::vector<torch::Tensor> parts;
    for (const auto& d : tdicts)
      parts.push_back(d[0].second);
    return torch::stack(parts);
  }());
  r.op = "TensorDict stack 8";
  r.shape = "8 x batch [256], 4 keys";
  r.tbatch = [&] { keep(TensorDict::stack(tds)); };
  r.torch = {{"per-key torch::stack", [&] {
                TorchDict out;
                out.reserve(tdicts[0].size());
                std::vector<torch::Tensor> parts(tdicts.size());
                for (std::size_t k = 0; k < tdicts[0].size(); ++k) {
                  for (std::size_t i = 0; i < tdicts.size(); ++i)
                    parts[i] = tdicts[i][k].second;
                  out.emplace_back(tdicts[0][k].first, torch::stack(parts));
                }
                keep(out);
              }}};
  run_row(r);
}

// ------------------------------------------------------------------ cost curves

struct CurvePoint {
  double x = 0;         // the curve's abscissa: B, mean rows per element, or bytes
  double elements = 0;  // tensors in the batch (conversions); 0: not a per-element curve
  Result result;
};

/// Each point gets as many interleaved rounds as fit in this, between 1 and --reps.
constexpr double kCurveRoundBudgetS = 3.0;

/// A sink for conversions() that measures its four conversions as points of `points`.
std::function<void(Row)> curve_sink(std::vector<CurvePoint>& points, double x, double elements) {
  return [&points, x, elements](Row row) {
    static const std::array<std::string, 4> curved{"list_to_padded", "list_to_packed",
                                                   "padded_to_packed", "packed_to_padded"};
    if (std::find(curved.begin(), curved.end(), row.op) == curved.end()) return;
    points.push_back({x, elements, measure_row(std::move(row), kCurveRoundBudgetS)});
  };
}

/// Elements of U[1, 7] rows (4 on average) x 16 floats, B = 1 .. 1e6: per-element costs.
std::vector<CurvePoint> conversions_over_batch() {
  std::vector<CurvePoint> points;
  for (index_t B = 1; B <= 1'000'000; B *= 10)
    conversions("B " + std::to_string(B) + " x U[1,7] x 16 f32", point_sets(B, 7, 16, 42), 1,
                curve_sink(points, double(B), double(B)));
  return points;
}

/// 256 elements of U[1, 2m - 1] rows (m on average) x 16 floats, m = 1 .. 4096: bandwidth.
std::vector<CurvePoint> conversions_over_size() {
  constexpr index_t kBatch = 256;
  std::vector<CurvePoint> points;
  for (index_t mean_rows = 1; mean_rows <= 4096; mean_rows *= 4)
    conversions("256 x U[1," + std::to_string(2 * mean_rows - 1) + "] x 16 f32",
                point_sets(kBatch, 2 * mean_rows - 1, 16, 43), 1,
                curve_sink(points, double(mean_rows), double(kBatch)));
  return points;
}

/// Total traffic (bytes read + written) of the kernel curves: 4 KiB (in L1) .. 1 GiB, x4.
std::vector<double> kernel_curve_bytes() {
  std::vector<double> bytes;
  for (double b = 4096; b <= double(1L << 30); b *= 4)
    bytes.push_back(b);
  return bytes;
}

/// pad, scatter, segment_reduce and space_to_batch_nd over kernel_curve_bytes().
std::vector<CurvePoint> kernel_curves() {
  std::vector<CurvePoint> points;
  auto add = [&points](Row row) {
    const double bytes = row.bytes;
    points.push_back({bytes, 0, measure_row(std::move(row), kCurveRoundBudgetS)});
  };
  namespace F = torch::nn::functional;
  constexpr index_t kCols = 16;  // scatter and segment_reduce rows: 16 floats, as in the table
  for (double target : kernel_curve_bytes()) {
    // pad constant, 1 on each side of H and W of n 30x30 images.
    constexpr index_t kSide = 30;
    const double image_bytes = double(kSide * kSide + (kSide + 2) * (kSide + 2)) * 4;
    const Tensor<float> x = random_tensor(
        Shape{std::max<index_t>(1, std::llround(target / image_bytes)), kSide, kSide}, 3);
    const torch::Tensor tx = torch_view(x);
    const std::vector<index_t> pad{1, 1, 1, 1};
    const auto opts = F::PadFuncOptions({1, 1, 1, 1}).mode(torch::kConstant);
    expect_same("pad constant", tbatch::pad(x, pad, PadMode::constant), F::pad(tx, opts));
    Row r;
    r.op = "pad constant";
    r.shape = "(" + std::to_string(x.size(0)) + ",30,30) f32, 1 on H,W";
    r.bytes = double(x.size(0)) * image_bytes;
    r.tbatch = [&] { keep(tbatch::pad(x, pad, PadMode::constant)); };
    r.torch = {{"nn::functional::pad", [&] { keep(F::pad(tx, opts)); }}};
    add(std::move(r));
  }
  for (double target : kernel_curve_bytes()) {
    // index_add of random rows: per update 16 floats and an index read, a tenth of a row written.
    const double update_bytes = kCols * 4 + 8 + kCols * 4 / 10.0;
    const index_t updates_n = std::max<index_t>(10, std::llround(target / update_bytes));
    const index_t rows = updates_n / 10;
    const Tensor<float> updates = random_tensor(Shape{updates_n, kCols}, 5);
    const Tensor<index_t> index = random_index(updates_n, rows, 7);
    const torch::Tensor tupdates = torch_view(updates);
    const torch::Tensor tindex =
        torch::from_blob(const_cast<index_t*>(index.data()), {updates_n}, torch::kInt64);
    Tensor<float> x(Shape{rows, kCols});
    torch::Tensor tx = torch::zeros({rows, kCols});
    expect_same("index_add", tbatch::index_add_(x, 0, index, updates),
                tx.index_add_(0, tindex, tupdates));
    Row r;
    r.op = "scatter (index_add)";
    r.shape = std::to_string(updates_n) + "x16 f32 into " + std::to_string(rows) + " rows";
    r.bytes = double(updates_n * kCols * 4 + updates_n * 8 + rows * kCols * 4);
    r.tbatch = [&] { keep(tbatch::index_add_(x, 0, index, updates)); };
    r.torch = {{"index_add_", [&] { keep(tx.index_add_(0, tindex, tupdates)); }},
               {"index_put_(accumulate)",
                [&] { keep(tx.index_put_({tindex}, tupdates, /*accumulate=*/true)); }}};
    add(std::move(r));
  }
  for (double target : kernel_curve_bytes()) {
    // segment_reduce sum of segments of 10 rows on average, some empty.
    const double row_bytes = kCols * 4 + (kCols * 4 + 8) / 10.0;
    const index_t rows = std::max<index_t>(10, std::llround(target / row_bytes));
    const index_t segments = rows / 10;
    const Tensor<float> values = random_tensor(Shape{rows, kCols}, 9);
    Tensor<index_t> first_idx = tbatch_bench::random_first_idx(rows, segments, 11);
    const torch::Tensor tvalues = torch_view(values);
    const torch::Tensor toffsets =
        torch::from_blob(first_idx.data(), {segments + 1}, torch::kInt64);
    expect_same("segment_reduce sum", tbatch::segment_reduce(values, first_idx, Reduce::sum),
                torch::segment_reduce(tvalues, "sum", {}, {}, toffsets));
    Row r;
    r.op = "segment_reduce sum";
    r.shape = std::to_string(rows) + "x16 f32, " + std::to_string(segments) + " segments";
    r.bytes = double(rows * kCols * 4 + segments * kCols * 4 + (segments + 1) * 8);
    r.tbatch = [&] { keep(tbatch::segment_reduce(values, first_idx, Reduce::sum)); };
    r.torch = {{"segment_reduce(offsets)",
                [&] { keep(torch::segment_reduce(tvalues, "sum", {}, {}, toffsets)); }}};
    add(std::move(r));
  }
  for (double target : kernel_curve_bytes()) {
    // space_to_batch_nd, block 2x2, of one SxSx64 image (S even): its runs are 64 floats.
    constexpr index_t kChannels = 64;
    const index_t half_side =
        std::max<index_t>(1, std::llround(std::sqrt(target / (2.0 * kChannels * 4)) / 2));
    const index_t side = 2 * half_side;
    const std::vector<index_t> block{2, 2};
    const std::vector<std::array<index_t, 2>> none{{0, 0}, {0, 0}};
    const Tensor<float> x = random_tensor(Shape{1, side, side, kChannels}, 13);
    const torch::Tensor tx = torch_view(x);
    const std::vector<int64_t> split{1, half_side, 2, half_side, 2, kChannels};
    const std::vector<int64_t> order{2, 4, 0, 1, 3, 5};
    torch::Tensor preallocated = torch::empty({4, half_side, half_side, kChannels});
    auto torch_s2b = [&] {
      return tx.reshape(split).permute(order).contiguous().reshape(
          {4, half_side, half_side, kChannels});
    };
    expect_same("space_to_batch_nd", tbatch::space_to_batch_nd(x, block, none), torch_s2b());
    Row r;
    r.op = "space_to_batch_nd";
    r.shape = "(1," + std::to_string(side) + "," + std::to_string(side) + ",64) f32, block 2x2";
    r.bytes = 2.0 * double(x.numel()) * 4;
    r.tbatch = [&] { keep(tbatch::space_to_batch_nd(x, block, none)); };
    r.torch = {{"reshape/permute/contiguous", [&] { keep(torch_s2b()); }},
               {"copy_ of permuted view into preallocated", [&] {
                  keep(preallocated.view({2, 2, 1, half_side, half_side, kChannels})
                           .copy_(tx.reshape(split).permute(order)));
                }}};
    add(std::move(r));
  }
  return points;
}

// ------------------------------------------------------------------ output

std::string fmt_time(double s) {
  if (std::isnan(s)) return "—";
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f µs", s * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  return buf;
}

std::string fmt(double v, const char* f) {
  if (std::isnan(v)) return "—";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double frac(const Result& r, double s) {
  return r.row.bytes > 0 ? r.memcpy_s / s : NAN;
}

void write_markdown(std::ostream& out) {
  out << "| op | workload | tbatch | libtorch (best formulation) | libtorch / tbatch | Eigen "
         "Tensor "
         "| Eigen / tbatch | memcpy, same bytes | tbatch GB/s | tbatch of memcpy | libtorch of "
         "memcpy | load |\n";
  out << "|---|---|--:|---|--:|---|--:|--:|--:|--:|--:|--:|\n";
  for (const Result& r : results) {
    std::string torch_cell = fmt_time(r.torch_s);
    if (!r.torch_name.empty()) torch_cell += " `" + r.torch_name + "`";
    std::string eigen_cell = fmt_time(r.eigen_s);
    if (!r.eigen_name.empty()) eigen_cell += " `" + r.eigen_name + "`";
    out << "| " << r.row.op << (r.row.note.empty() ? "" : " (" + r.row.note + ")") << " | "
        << r.row.shape << " | " << fmt_time(r.tbatch_s) << " | " << torch_cell << " | "
        << fmt(r.torch_s / r.tbatch_s, "%.2fx") << " | " << eigen_cell << " | "
        << fmt(r.eigen_s / r.tbatch_s, "%.2fx") << " | " << fmt_time(r.memcpy_s) << " | "
        << fmt(r.row.bytes > 0 ? r.row.bytes / r.tbatch_s / 1e9 : NAN, "%.1f") << " | "
        << fmt(100 * frac(r, r.tbatch_s), "%.0f%%") << " | "
        << fmt(100 * frac(r, r.torch_s), "%.0f%%") << " | " << fmt(r.load, "%.2f") << " |\n";
  }
}

std::string csv_field(std::string s) {
  for (char& c : s)
    if (c == ',') c = ';';
  return s;
}

std::string csv_number(double v) {
  return std::isnan(v) ? std::string() : fmt(v, "%.6g");
}

void write_csv(std::ostream& out) {
  out << "op,workload,threads,streaming,bytes,tbatch_us,torch_formulation,torch_us,torch_ratio,"
         "eigen_formulation,eigen_us,eigen_ratio,memcpy_us,tbatch_gbs,tbatch_frac,torch_frac,"
         "eigen_frac,load\n";
  for (const Result& r : results)
    out << csv_field(r.row.op) << ',' << csv_field(r.row.shape) << ',' << r.row.threads << ','
        << (r.row.streaming ? 1 : 0) << ',' << csv_number(r.row.bytes) << ','
        << csv_number(r.tbatch_s * 1e6) << ',' << csv_field(r.torch_name) << ','
        << csv_number(r.torch_s * 1e6) << ',' << csv_number(r.torch_s / r.tbatch_s) << ','
        << csv_field(r.eigen_name) << ',' << csv_number(r.eigen_s * 1e6) << ','
        << csv_number(r.eigen_s / r.tbatch_s) << ',' << csv_number(r.memcpy_s * 1e6) << ','
        << csv_number(r.row.bytes > 0 ? r.row.bytes / r.tbatch_s / 1e9 : NAN) << ','
        << csv_number(frac(r, r.tbatch_s)) << ',' << csv_number(frac(r, r.torch_s)) << ','
        << csv_number(frac(r, r.eigen_s)) << ',' << csv_number(r.load) << '\n';
}

/// One curve file; make_report.sh plots its columns by name.
void write_curve_csv(const std::string& path, const char* x_name,
                     const std::vector<CurvePoint>& points) {
  std::ofstream out(path);
  out << "op,workload," << x_name
      << ",elements,bytes,tbatch_us,torch_formulation,torch_us,memcpy_us,tbatch_gbs,torch_gbs,"
         "memcpy_gbs,tbatch_ns_per_element,torch_ns_per_element,memcpy_ns_per_element,load\n";
  for (const CurvePoint& p : points) {
    const Result& r = p.result;
    auto gbs = [&](double s) { return csv_number(r.row.bytes / s / 1e9); };
    auto per_element = [&](double s) {
      return csv_number(p.elements > 0 ? s * 1e9 / p.elements : NAN);
    };
    out << csv_field(r.row.op) << ',' << csv_field(r.row.shape) << ',' << csv_number(p.x) << ','
        << csv_number(p.elements) << ',' << csv_number(r.row.bytes) << ','
        << csv_number(r.tbatch_s * 1e6) << ',' << csv_field(r.torch_name) << ','
        << csv_number(r.torch_s * 1e6) << ',' << csv_number(r.memcpy_s * 1e6) << ','
        << gbs(r.tbatch_s) << ',' << gbs(r.torch_s) << ',' << gbs(r.memcpy_s) << ','
        << per_element(r.tbatch_s) << ',' << per_element(r.torch_s) << ','
        << per_element(r.memcpy_s) << ',' << csv_number(r.load) << '\n';
  }
}

void write_curves(const std::string& dir) {
  write_curve_csv(dir + "/curves_conversions_batch.csv", "B", conversions_over_batch());
  write_curve_csv(dir + "/curves_conversions_size.csv", "mean_rows", conversions_over_size());
  write_curve_csv(dir + "/curves_kernels.csv", "bytes", kernel_curves());
}

void usage() {
  std::cerr << "usage: tbatch_compare [--reps N] [--quick] [--threads 1|2] [--filter SUBSTR]...\n"
               "                      [--csv FILE] [--md FILE] [--system-malloc]\n"
               "                      [--streaming-min-bytes N] [--curves DIR]\n";
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--reps")
      options.reps = std::max(1, std::stoi(value()));
    else if (a == "--quick")
      options.quick = true;
    else if (a == "--threads")
      options.threads = std::stoi(value());
    else if (a == "--filter")
      options.filters.push_back(value());
    else if (a == "--csv")
      options.csv = value();
    else if (a == "--md")
      options.md = value();
    else if (a == "--system-malloc")
      options.system_malloc = true;
    else if (a == "--curves")
      options.curves_dir = value();
    else if (a == "--streaming-min-bytes")
      tbatch::set_streaming_stores_min_bytes(std::stoll(value()));
    else {
      usage();
      return 2;
    }
  }
  if (!options.system_malloc) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);  // never give freed heap memory back
  }
  torch::set_num_threads(1);
#ifdef _OPENMP
  omp_set_num_threads(1);
  const bool have_openmp = true;
#else
  const bool have_openmp = false;
  if (options.threads > 1) {
    std::cerr << "tbatch_compare: tbatch was built without TBATCH_OPENMP; 2-thread rows skipped\n";
    options.threads = 1;
  }
#endif
  std::cerr << "tbatch_compare: libtorch " << TORCH_VERSION << ", reps " << options.reps
            << (options.system_malloc ? ", glibc default malloc" : ", malloc keeps freed memory")
            << (have_openmp ? ", tbatch OpenMP on" : "") << ", tbatch streams outputs from "
            << tbatch::streaming_stores_min_bytes() << " bytes\n";

  if (!options.curves_dir.empty()) {
    current_threads = 1;
    write_curves(options.curves_dir);
    return 0;
  }

  for (int threads = 1; threads <= options.threads; ++threads) {
    current_threads = threads;
    set_threads(threads);
    const auto big = point_sets(256, 1024, 64, 42);
    conversions("256 x U[1,1024] x 64 f32", big, threads);
    if (threads == 1) conversions("8 tiny x U[1,4] x 3 f32", point_sets(8, 4, 3, 1), 1);
    pad_rows(threads);
    space_to_batch_rows(threads);
    if (threads == 1) {
      scatter_rows();
      segment_rows();
      tensordict_rows();
      math_rows();
      reduction_rows();
      const auto sequences = point_sets(1024, 512, 64, 51);
      const auto small = point_sets(100'000, 8, 16, 52);
      ragged_rows("1024 x U[1,512] x 64 f32", sequences);
      ragged_rows("1e5 x U[1,8] x 16 f32", small);
      jagged_rows("1024 x U[1,512] x 64 f32", sequences, 71);
      jagged_rows("1e5 x U[1,8] x 16 f32", small, 72);
    }
  }

  write_markdown(std::cout);
  if (!options.md.empty()) {
    std::ofstream f(options.md);
    write_markdown(f);
  }
  if (!options.csv.empty()) {
    std::ofstream f(options.csv);
    write_csv(f);
  }
  return 0;
}
