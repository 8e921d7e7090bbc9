#pragma once
// Inputs shared by the comparison (compare/tbatch_compare.cpp), the footprint program and the
// Google Benchmark programs, so that they measure the same workloads.

#include <algorithm>
#include <random>
#include <vector>

#include <tbatch/tbatch.hpp>

namespace tbatch_bench {

/// A contiguous tensor of `shape` with values uniform in [-1, 1), reproducible from `seed`.
inline tbatch::Tensor<float> random_tensor(const tbatch::Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  tbatch::Tensor<float> t = tbatch::Tensor<float>::empty(shape);
  for (tbatch::index_t i = 0; i < t.numel(); ++i)
    t.data()[i] = value(rng);
  return t;
}

/// n point sets of U[1, max_rows] rows of last_dim floats (the comparison's conversion inputs:
/// point_sets(256, 1024, 64, 42) is its standard workload).
inline std::vector<tbatch::Tensor<float>> point_sets(tbatch::index_t n, tbatch::index_t max_rows,
                                                     tbatch::index_t last_dim, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<tbatch::index_t> rows(1, max_rows);
  std::vector<tbatch::Tensor<float>> list;
  for (tbatch::index_t i = 0; i < n; ++i)
    list.push_back(random_tensor(tbatch::Shape{rows(rng), last_dim}, seed + unsigned(i)));
  return list;
}

/// first_idx of `segments` segments of `rows` rows cut at random places (some empty).
inline tbatch::Tensor<tbatch::index_t> random_first_idx(tbatch::index_t rows,
                                                        tbatch::index_t segments, unsigned seed) {
  tbatch::Tensor<tbatch::index_t> first_idx =
      tbatch::Tensor<tbatch::index_t>::empty(tbatch::Shape{segments + 1});
  std::mt19937 rng(seed);
  std::uniform_int_distribution<tbatch::index_t> cut(0, rows);
  std::vector<tbatch::index_t> cuts(std::size_t(segments - 1));
  for (auto& c : cuts)
    c = cut(rng);
  std::sort(cuts.begin(), cuts.end());
  first_idx.data()[0] = 0;
  std::copy(cuts.begin(), cuts.end(), first_idx.data() + 1);
  first_idx.data()[segments] = rows;
  return first_idx;
}

}  // namespace tbatch_bench
