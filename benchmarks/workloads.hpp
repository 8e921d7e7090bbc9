#pragma once
// Inputs shared by the comparison (compare/tbatch_compare.cpp) and the footprint program, so
// that both measure the same workloads.

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

}  // namespace tbatch_bench
