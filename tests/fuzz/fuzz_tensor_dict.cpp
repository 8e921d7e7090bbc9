// Fuzz target: sequences of TensorDict indexing and shape ops. Each op is mirrored on the
// entries as plain tensors (the same op over the leading batch dims, feature dims kept); every
// accepted step must give a dict whose entries equal the mirrors and whose batch size equals
// the shape of the batch-only entry. Rejections must be tbatch::Errors.

#include <algorithm>
#include <string>

#include "fuzz_input.hpp"

namespace tbatch::fuzz {
namespace {

/// The dict's entries as tensors: "batch" has exactly the batch shape, "points" two more
/// feature dims, "nested/ids" lives in a nested TensorDict.
struct Mirror {
  Tensor<std::int32_t> batch;
  Tensor<float> points;
  Tensor<std::int64_t> ids;
};

/// `dims` (batch dims) followed by the feature dims of a tensor with `features` trailing dims.
std::vector<index_t> with_feature_dims(std::vector<index_t> dims, index_t batch_dims,
                                       index_t features) {
  for (index_t f = 0; f < features; ++f)
    dims.push_back(batch_dims + f);
  return dims;
}

template <class T>
std::vector<index_t> sizes_with_features(std::vector<index_t> sizes, const Tensor<T>& t,
                                         index_t batch_dims) {
  for (index_t d = batch_dims; d < t.dim(); ++d)
    sizes.push_back(t.size(d));
  return sizes;
}

/// Applies `op` (a function of (tensor, feature dim count)) to every mirror entry.
template <class Op>
Mirror mirrored(const Mirror& m, Op&& op) {
  return Mirror{op(m.batch, index_t(0)), op(m.points, index_t(2)), op(m.ids, index_t(1))};
}

void check(const TensorDict& td, const Mirror& m) {
  expect(td.batch_size() == m.batch.shape(), "batch_size equals the batch-only entry's shape");
  expect(equal(td.get<std::int32_t>("batch"), m.batch), "entry 'batch'");
  expect(equal(td.get<float>("points"), m.points), "entry 'points'");
  expect(equal(td.get_dict("nested").get<std::int64_t>("ids"), m.ids), "entry 'nested/ids'");
  expect(td.get_dict("nested").batch_size() == td.batch_size(), "nested batch_size");
}

/// One op on (td, m); returns false when the dict rejected it (and the state is unchanged).
bool step(FuzzInput& in, TensorDict& td, Mirror& m) {
  const index_t bd = td.batch_dims();
  const index_t any_dim = in.in_range(-bd - 1, bd);  // sometimes out of range
  const index_t d = any_dim < 0 ? any_dim + bd : any_dim;
  std::optional<TensorDict> next;
  Mirror out;
  const auto run = [&](auto&& dict_op, auto&& tensor_op) {
    if (!accepts([&] { next = dict_op(); })) return false;
    out = mirrored(m, tensor_op);
    return true;
  };
  bool ok = false;
  switch (in.byte() % 12) {
    case 0: {
      const index_t i = in.in_range(-3, 3);
      ok = run([&] { return td.index({i}); }, [&](const auto& t, index_t) { return t.index({i}); });
      break;
    }
    case 1: {
      const Slice s{in.in_range(-3, 3), in.in_range(-3, 4), in.in_range(1, 2)};
      ok = run([&] { return td.index({s}); }, [&](const auto& t, index_t) { return t.index({s}); });
      break;
    }
    case 2: {
      const index_t i = in.in_range(-2, 2);
      ok = run(
          [&] {
            return td.index({Slice{}, i});
          },
          [&](const auto& t, index_t) {
            return t.index({Slice{}, i});
          });
      break;
    }
    case 3: {
      const index_t n = in.in_range(0, 4);
      Tensor<index_t> positions(Shape{n});
      for (index_t k = 0; k < n; ++k)
        positions(k) = in.in_range(-3, 3);
      ok = run([&] { return td.index({positions}); },
               [&](const auto& t, index_t) { return t.index({positions}); });
      break;
    }
    case 4: {
      if (bd == 0) break;
      Tensor<bool> mask(Shape{td.batch_size()[0]});
      for (index_t k = 0; k < mask.numel(); ++k)
        mask(k) = in.boolean();
      ok = run([&] { return td.index({mask}); },
               [&](const auto& t, index_t) { return t.index({mask}); });
      break;
    }
    case 5: {
      std::vector<index_t> sizes;
      switch (in.byte() % 3) {
        case 0:
          sizes = {-1};
          break;
        case 1:
          sizes = {1, -1};
          break;
        default:
          sizes = {in.in_range(0, 3), -1};
          break;
      }
      ok =
          run([&] { return td.reshape(sizes); },
              [&](const auto& t, index_t) { return t.reshape(sizes_with_features(sizes, t, bd)); });
      break;
    }
    case 6: {
      std::vector<index_t> dims(bd);
      for (index_t k = 0; k < bd; ++k)
        dims[k] = k;
      for (index_t k = bd; k > 1; --k)
        std::swap(dims[k - 1], dims[in.in_range(0, k - 1)]);
      ok = run([&] { return td.permute(dims); },
               [&](const auto& t, index_t features) {
                 return t.permute(with_feature_dims(dims, bd, features));
               });
      break;
    }
    case 7: {
      const index_t other = in.in_range(0, std::max<index_t>(bd - 1, 0));
      ok = run([&] { return td.transpose(any_dim, other); },
               [&](const auto& t, index_t) { return t.transpose(d, other); });
      break;
    }
    case 8: {
      const index_t at_dim = in.in_range(-bd - 1, bd);
      const index_t normal = at_dim < 0 ? at_dim + bd + 1 : at_dim;
      ok = run([&] { return td.unsqueeze(at_dim); },
               [&](const auto& t, index_t) { return t.unsqueeze(normal); });
      break;
    }
    case 9: {
      ok = run([&] { return td.squeeze(any_dim); },
               [&](const auto& t, index_t) { return t.size(d) == 1 ? t.squeeze(d) : t; });
      break;
    }
    case 10: {
      const index_t end = in.in_range(0, std::max<index_t>(bd - 1, 0));
      ok = run([&] { return td.flatten(0, end); },
               [&](const auto& t, index_t) { return t.flatten(0, end); });
      break;
    }
    default: {
      const index_t parts = in.in_range(1, 3);
      const std::size_t which = in.byte();
      ok = run(
          [&] {
            const std::vector<TensorDict> pieces = td.chunk(parts, 0);
            return pieces.empty() ? td : pieces[which % pieces.size()];
          },
          [&](const auto& t, index_t) {
            const auto pieces = t.chunk(parts, 0);
            return pieces.empty() ? t : pieces[which % pieces.size()];
          });
      break;
    }
  }
  if (!ok) return false;
  td = std::move(*next);
  m = out;
  check(td, m);
  return true;
}

}  // namespace
}  // namespace tbatch::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tbatch;
  using namespace tbatch::fuzz;
  FuzzInput in(data, size);
  Shape batch;
  const index_t batch_dims = in.in_range(0, 3);
  for (index_t k = 0; k < batch_dims; ++k)
    batch.push_back(in.in_range(0, 4));
  std::vector<index_t> points_shape(batch.begin(), batch.end()), ids_shape = points_shape;
  points_shape.insert(points_shape.end(), {2, 3});
  ids_shape.push_back(2);
  Mirror m{values_from<std::int32_t>(in, batch), values_from<float>(in, Shape(points_shape)),
           values_from<std::int64_t>(in, Shape(ids_shape))};
  TensorDict td(batch);
  td.set("batch", m.batch);
  td.set("points", m.points);
  TensorDict nested(batch);
  nested.set("ids", m.ids);
  td.set("nested", nested);
  check(td, m);
  for (int steps = in.in_range(1, 6); steps > 0; --steps)
    step(in, td, m);

  // Locked, no replacement may change the key set, nested keys included (tensor by dict, dict
  // by tensor, dict by a dict of other keys); the same kinds and keys are accepted.
  auto key_set = [](const TensorDict& dict) {
    std::vector<std::vector<std::string>> paths;
    for (const NestedKey& key : dict.keys(true))
      paths.push_back(key.parts());
    std::sort(paths.begin(), paths.end());
    return paths;
  };
  const auto keys_before = key_set(td);
  td.lock_();
  for (int tries = in.in_range(0, 4); tries > 0; --tries) {
    const Shape& batch_now = td.batch_size();
    const std::string key = in.boolean() ? "points" : "nested";
    TensorDict replacement(batch_now);
    Shape with_pair = batch_now;
    with_pair.push_back(2);
    if (in.boolean())
      replacement.set(in.boolean() ? "ids" : "other", Tensor<std::int64_t>(with_pair));
    const bool as_dict = in.boolean();
    const bool accepted = accepts([&] {
      if (as_dict)
        td.set(key, replacement);
      else
        td.set(key, Tensor<float>(with_pair));
    });
    expect(key_set(td) == keys_before, "a locked TensorDict keeps its key set");
    expect(!accepted || (key == "nested") == as_dict, "a locked TensorDict keeps its kinds");
  }
  return 0;
}
