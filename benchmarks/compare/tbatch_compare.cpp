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
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tbatch/core/eigen_tensor.hpp>
#include <tbatch/tbatch.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

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

// ------------------------------------------------------------------ options

struct Options {
  int reps = 11;
  bool quick = false;  // smaller repetition counts (smoke test)
  bool system_malloc = false;
  int threads = 1;  // 2: also run the 2-thread rows
  std::string csv, md, filter;
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

std::vector<double> measure(const std::vector<const std::function<void()>*>& fns) {
  const std::size_t n = fns.size();
  std::vector<long> calls(n, 1);
  constexpr double min_sample_s = 2e-3;
  for (std::size_t k = 0; k < n; ++k) {
    (*fns[k])();  // warm-up (first touch, caches, lazy init)
    const double t = seconds_of(*fns[k], 1);
    if (t < min_sample_s) {
      const double t2 = seconds_of(*fns[k], std::max(1L, long(min_sample_s / 10 / t)));
      calls[k] = std::max(1L, long(std::ceil(min_sample_s / std::max(t2, 1e-9))));
    }
  }
  const int reps = options.quick ? std::min(options.reps, 3) : options.reps;
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

void run_row(Row row) {
  if (!options.filter.empty() && row.op.find(options.filter) == std::string::npos) return;
  if (row.threads > options.threads) return;
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
  const std::vector<double> m = measure(fns);
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
  std::fprintf(stderr,
               "  %-34s tbatch %10.1f us  torch %10.1f us  eigen %10.1f us  memcpy %10.1f us\n",
               res.row.op.c_str(), res.tbatch_s * 1e6, res.torch_s * 1e6, res.eigen_s * 1e6,
               res.memcpy_s * 1e6);
  set_threads(current_threads);
  results.push_back(std::move(res));
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

Tensor<float> random_tensor(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  Tensor<float> t = Tensor<float>::empty(shape);
  for (index_t i = 0; i < t.numel(); ++i)
    t.data()[i] = value(rng);
  return t;
}

void conversions(const std::string& tag, const std::vector<Tensor<float>>& list, int threads) {
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

  const bool big = valid > 1e6;  // tiny rows measure per-call overhead, not bandwidth
  Row r;
  r.shape = shape;
  r.streaming = big;
  r.threads = threads;

  r.op = "list_to_padded" + suffix;
  r.bytes = big ? valid + padded : 0;
  r.tbatch = [&] { keep(tbatch::list_to_padded(list, 0.0f)); };
  r.torch = {{"pad_sequence(batch_first)", [&] { keep(torch_pad_sequence()); }},
             {"empty + per-element copy_/fill_", [&] { keep(torch_padded_loop()); }}};
  run_row(r);

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
  run_row(r);

  r.op = "list_to_packed" + suffix;
  r.bytes = big ? 2 * valid : 0;
  r.tbatch = [&] { keep(tbatch::list_to_packed(list)); };
  r.torch = {{"cat(list, 0)", [&] { keep(torch_cat()); }}};
  run_row(r);

  r.op = "padded_to_packed" + suffix;
  r.bytes = big ? 2 * valid : 0;
  r.tbatch = [&] { keep(tbatch::padded_to_packed(padded_batch.data(), spt)); };
  r.torch = {{"cat of narrow(0, 0, n_i) views", [&] { keep(torch_unpad_cat()); }}};
  run_row(r);

  r.op = "packed_to_padded" + suffix;
  r.bytes = big ? valid + padded : 0;
  r.tbatch = [&] {
    keep(tbatch::packed_to_padded(packed_batch.data(), packed_batch.shape_per_tensor(), first_idx,
                                  0.0f));
  };
  r.torch = {{"pad_sequence(split_with_sizes)", [&] { keep(torch_split_pad()); }},
             {"empty + per-element copy_/fill_", [&] { keep(torch_packed_loop()); }}};
  run_row(r);
}

std::vector<Tensor<float>> point_sets(index_t n, index_t max_rows, index_t last_dim,
                                      unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<index_t> rows(1, max_rows);
  std::vector<Tensor<float>> list;
  for (index_t i = 0; i < n; ++i)
    list.push_back(random_tensor(Shape{rows(rng), last_dim}, seed + unsigned(i)));
  return list;
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
  Tensor<index_t> random_index = Tensor<index_t>::empty(Shape{kUpdates});
  std::mt19937 rng(7);
  std::uniform_int_distribution<index_t> row(0, kRows - 1);
  for (index_t i = 0; i < kUpdates; ++i)
    random_index.data()[i] = row(rng);
  Tensor<index_t> sorted_index = random_index.clone();
  std::sort(sorted_index.data(), sorted_index.data() + kUpdates);
  const torch::Tensor tupdates = torch_view(updates);
  const double bytes = double(kUpdates * kCols * 4 + kUpdates * 8 + kRows * kCols * 4);

  for (bool sorted : {false, true}) {
    const Tensor<index_t>& index = sorted ? sorted_index : random_index;
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
  Tensor<index_t> first_idx = Tensor<index_t>::empty(Shape{kSegments + 1});
  std::mt19937 rng(11);
  std::uniform_int_distribution<index_t> cut(0, kRows);
  std::vector<index_t> cuts(kSegments - 1);
  for (auto& c : cuts)
    c = cut(rng);
  std::sort(cuts.begin(), cuts.end());
  first_idx.data()[0] = 0;
  std::copy(cuts.begin(), cuts.end(), first_idx.data() + 1);
  first_idx.data()[kSegments] = kRows;
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
  if (!(eigen_out.reshape({32, 112, 112, 64}) == y)) {
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

void write_csv(std::ostream& out) {
  out << "op,workload,threads,streaming,bytes,tbatch_us,torch_formulation,torch_us,torch_ratio,"
         "eigen_formulation,eigen_us,eigen_ratio,memcpy_us,tbatch_gbs,tbatch_frac,torch_frac,"
         "eigen_frac,load\n";
  auto num = [](double v) { return std::isnan(v) ? std::string() : fmt(v, "%.6g"); };
  for (const Result& r : results)
    out << csv_field(r.row.op) << ',' << csv_field(r.row.shape) << ',' << r.row.threads << ','
        << (r.row.streaming ? 1 : 0) << ',' << num(r.row.bytes) << ',' << num(r.tbatch_s * 1e6)
        << ',' << csv_field(r.torch_name) << ',' << num(r.torch_s * 1e6) << ','
        << num(r.torch_s / r.tbatch_s) << ',' << csv_field(r.eigen_name) << ','
        << num(r.eigen_s * 1e6) << ',' << num(r.eigen_s / r.tbatch_s) << ','
        << num(r.memcpy_s * 1e6) << ','
        << num(r.row.bytes > 0 ? r.row.bytes / r.tbatch_s / 1e9 : NAN) << ','
        << num(frac(r, r.tbatch_s)) << ',' << num(frac(r, r.torch_s)) << ','
        << num(frac(r, r.eigen_s)) << ',' << num(r.load) << '\n';
}

void usage() {
  std::cerr << "usage: tbatch_compare [--reps N] [--quick] [--threads 1|2] [--filter SUBSTR]\n"
               "                      [--csv FILE] [--md FILE] [--system-malloc]\n"
               "                      [--streaming-min-bytes N]\n";
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
      options.filter = value();
    else if (a == "--csv")
      options.csv = value();
    else if (a == "--md")
      options.md = value();
    else if (a == "--system-malloc")
      options.system_malloc = true;
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
