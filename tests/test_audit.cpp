// The bad-input audit: for every public function, the inputs it must reject, the exception
// type, and the parts its message must name (the function, the argument, the offending value).
// A new public function gets its rows here.

#include <array>
#include <filesystem>
#include <limits>
#include <string>

#include "test_support.hpp"

// The io and DLPack rows, when the build has those components (tests/CMakeLists.txt).
#ifdef TBATCH_AUDIT_WITH_IO
#include <tbatch/io/safetensors.hpp>
#endif
#ifdef TBATCH_AUDIT_WITH_DLPACK
#include <tbatch/dlpack.hpp>
#endif

using namespace tbatch;

namespace {

constexpr index_t huge = index_t(1) << 62;
constexpr index_t int64_max = std::numeric_limits<index_t>::max();

/// Runs `call`; it must throw exactly an `E` (a tbatch::Error) whose message holds every one of
/// `fragments`.
template <class E, class Call>
void audit(Call&& call, std::initializer_list<std::string> fragments) {
  static_assert(std::is_base_of_v<Error, E>);
  try {
    call();
    FAIL("no exception; expected " << typeid(E).name());
  } catch (const E& e) {
    const std::string message = e.what();
    INFO("message: " << message);
    for (const std::string& fragment : fragments)
      CHECK(message.find(fragment) != std::string::npos);
  } catch (const std::exception& e) {
    FAIL("wrong exception type; message: " << e.what());
  }
}

#define AUDIT(E, call, ...)                       \
  do {                                            \
    INFO(#call);                                  \
    audit<E>([&] { (void)(call); }, __VA_ARGS__); \
  } while (false)

Tensor<float> ones(Shape shape) {
  return Tensor<float>(shape, 1.0f);
}
Tensor<index_t> ints(Shape shape, std::vector<index_t> values) {
  return Tensor<index_t>(shape, values);
}

}  // namespace

TEST_CASE("audit: core Shape and Tensor", "[audit]") {
  AUDIT(ShapeError, Shape({2, -3}), {"Shape", "size -3", "negative"});
  AUDIT(ValueError, set_max_threads(-2), {"set_max_threads", "threads is -2", ">= 0"});
  AUDIT(ShapeError, (Shape{huge, 4}.numel()), {"numel", "overflows"});
  AUDIT(ShapeError, Tensor<float>(Shape{huge, 4}), {"numel", "overflow"});
  AUDIT(ShapeError, Tensor<float>(Shape{0, huge, 4}), {"numel", "[0, 4611686018427387904, 4]"});
  std::array<float, 4> buffer{};
  AUDIT(ShapeError,
        Tensor<float>::borrow(buffer.data(), Shape{2, 2}, Strides{int64_max, -int64_max - 1}),
        {"Tensor::borrow", "shape [2, 2]", "strides [9223372036854775807, -9223372036854775808]",
         "spans more elements"});
  AUDIT(ShapeError, Tensor<float>::borrow(buffer.data(), Shape{2, 2}, Strides{1}),
        {"Tensor::borrow", "strides [1]", "shape [2, 2]"});
  AUDIT(ValueError, Tensor<float>::borrow(nullptr, Shape{2}), {"Tensor::borrow", "null", "[2]"});
  AUDIT(ValueError, set_streaming_stores_min_bytes(-5),
        {"set_streaming_stores_min_bytes", "bytes is -5", ">= 0"});
  AUDIT(ShapeError, Tensor<float>(Shape{2, 2}, std::vector<float>{1, 2, 3}),
        {"Tensor", "3 values", "[2, 2]"});
  AUDIT(ShapeError, Tensor<float>::arange(-1), {"arange", "-1"});
  const Tensor<float> t = ones({2, 3});
  AUDIT(ValueError, t.with_layout(Layout{Shape{2, 4}, {3, 1}, 0}),
        {"Tensor::with_layout", "strides [3, 1]", "reaches elements 0 to 6", "buffer of 6"});
  AUDIT(ValueError, t.with_layout(Layout{Shape{2}, {-1}, 0}),
        {"Tensor::with_layout", "reaches elements -1 to 0"});
  AUDIT(ShapeError, t.with_layout(Layout{Shape{2, 3}, {1}, 0}),
        {"Tensor::with_layout", "1 strides", "rank 2"});
  AUDIT(ValueError, dtype_size(static_cast<DType>(12)), {"dtype_size", "dtype tag 12", "0 to 11"});
  AUDIT(ValueError, dtype_name(static_cast<DType>(-1)), {"dtype_name", "dtype tag -1"});
  AUDIT(ValueError, AnyTensor::empty(static_cast<DType>(12), Shape{2}),
        {"AnyTensor::empty", "dtype tag 12"});
  AUDIT(ValueError, AnyTensor::zeros(static_cast<DType>(12), Shape{2}),
        {"AnyTensor::zeros", "dtype tag 12"});
  AUDIT(ValueError, AnyTensor(t).with_layout(Layout{Shape{7}, {1}, 0}),
        {"AnyTensor::with_layout", "reaches elements 0 to 6", "buffer of 6"});
  AUDIT(IndexError, t.at({2, 0}), {"at", "2"});
  AUDIT(IndexError, t.at({0}), {"at"});
  AUDIT(IndexError, t.select(2, 0), {"dim 2", "rank 2"});
  AUDIT(IndexError, t.select(0, 5), {"select", "index 5"});
  AUDIT(ValueError, t.slice(1, 0, 3, 0), {"slice", "step 0"});
  AUDIT(IndexError, t.narrow(1, 4, 1), {"narrow", "start 4"});
  AUDIT(IndexError, t.narrow(1, 1, 5), {"narrow", "length 5"});
  AUDIT(ShapeError, t.permute({0}), {"permute", "1 dims", "rank 2"});
  AUDIT(ValueError, t.permute({0, 0}), {"permute", "dim 0", "more than once"});
  AUDIT(ShapeError, t.expand({4, 3}), {"expand", "size 4"});
  AUDIT(ShapeError, t.reshape({-1, -1}), {"reshape", "-1"});
  AUDIT(ShapeError, t.reshape({4, 2}), {"reshape", "[4, 2]", "6"});
  AUDIT(ShapeError, t.transpose(0, 1).view_as({6}), {"view"});
  AUDIT(IndexError, t.flatten(1, 0), {"flatten", "start dim 1", "end dim 0"});
  AUDIT(ShapeError, t.unflatten(1, {2, 2}), {"unflatten", "[2, 2]"});
  AUDIT(ValueError, t.split(0, 1), {"split", "split size 0"});
  AUDIT(ValueError, t.split(std::vector<index_t>{1, 1}, 1), {"split", "sum to 2", "size 3"});
  AUDIT(ValueError, t.chunk(0, 1), {"chunk", "chunks 0"});
  AUDIT(IndexError, t.index({0, 0, 0}), {"too many indices"});
  AUDIT(IndexError, t.index({Ellipsis, Ellipsis}), {"single ellipsis"});
  AUDIT(IndexError, t.index({ints({1}, {7})}), {"index 7", "size 2"});
  AUDIT(IndexError, t.index({Tensor<bool>(Shape{3}, true)}), {"mask", "[3]"});
  Tensor<float> target = ones({2, 3});
  AUDIT(ShapeError, target.index_put({0}, ones({4})), {"index_put", "value of shape [4]"});
  AUDIT(ValueError, Tensor<std::int8_t>(Shape{2}).index_put({0}, 300),
        {"index_put", "value 300", "int8", "[-128, 127]"});
  AUDIT(IndexError, target.index_put({2}, 1.0f), {"index_put", "index 2", "size 2"});
  AUDIT(ValueError, ones({1}).expand({3}).index_put({0}, 1.0f), {"index_put", "the tensor"});
  AUDIT(IndexError, target.index_fill({5}, 1.0f), {"index_fill", "index 5"});
  AUDIT(ValueError, Tensor<float>({2}, {1.0f, 300.0f}).checked_cast<std::int8_t>(),
        {"checked_cast", "element 1", "300", "int8", "[-128, 127]"});
  AUDIT(ValueError, Tensor<double>(Shape{1}, 1e300).checked_cast<float>(),
        {"checked_cast", "element 0", "1e+300", "float32", "finite values up to"});
  AUDIT(ShapeError, for_each([](float&, const float&) {}, target, ones({3, 2})),
        {"for_each", "[3, 2]", "[2, 3]"});
  AUDIT(ValueError, ones({2, 3}).transpose(0, 1).flat(), {"contiguous"});
  AUDIT(ShapeError, ones({2, 3, 1}).matrix(), {"matrix", "rank-2"});
}

TEST_CASE("audit: batch metadata and conversions", "[audit]") {
  const std::vector<Tensor<float>> ranks{ones({2, 3}), ones({1, 2, 3})};
  const std::vector<Tensor<float>> lasts{ones({2, 3}), ones({2, 4})};
  AUDIT(ShapeError, get_shape_per_tensor(ranks),
        {"get_shape_per_tensor", "2 dimensions", "got 3 at index 1"});
  AUDIT(ShapeError, get_shape_per_tensor(lasts),
        {"get_shape_per_tensor", "last dimension 3", "got 4 at index 1"});
  AUDIT(ShapeError, list_to_padded(ranks, 0.0f), {"list_to_padded", "got 3 at index 1"});
  AUDIT(ShapeError, list_to_packed(lasts), {"list_to_packed", "got 4 at index 1"});
  AUDIT(ShapeError, list_to_packed(std::vector<Tensor<float>>{Tensor<float>(Shape{})}),
        {"list_to_packed", "rank 0"});
  AUDIT(ShapeError, get_first_idx(ints({1, 2}, {1, 2})), {"get_first_idx", "1-d", "[1, 2]"});
  AUDIT(ValueError, get_first_idx(ints({2}, {3, -1})),
        {"get_first_idx", "numel_per_tensor[1] = -1"});
  AUDIT(ShapeError, get_first_idx(ints({2}, {int64_max, 1})), {"get_first_idx", "overflows"});
  const Tensor<index_t> spt = ints({2, 1}, {2, 3});
  AUDIT(ValueError, fill_max_shape(spt, {2}),
        {"fill_max_shape", "dim 0 of max_shape (2)", "tensor 1 (3)"});
  AUDIT(ValueError, fill_max_shape(spt, {-2}), {"fill_max_shape", "(-2)"});
  AUDIT(ShapeError, fill_max_shape(spt, {4, 4}), {"fill_max_shape", "max_shape [4, 4]"});
  AUDIT(ShapeError, fill_max_shape(ints({2}, {1, 2})), {"fill_max_shape", "2-d"});
  AUDIT(ValueError, fill_max_shape(ints({1, 1}, {-4})), {"fill_max_shape", "-4", "negative"});
  const std::vector<Tensor<float>> list{ones({2, 3}), ones({3, 3})};
  AUDIT(ValueError, list_to_padded(list, 0.0f, {2}), {"fill_max_shape", "(2)", "tensor 1 (3)"});
  AUDIT(ShapeError, list_to_padded(list, 0.0f, {huge}), {"overflow"});
  AUDIT(ShapeError, list_to_padded_into(list, 0.0f, Tensor<float>(Shape{2, 2, 3})),
        {"list_to_padded_into", "size 2 at dim 1", "tensor 1 has 3"});
  AUDIT(ShapeError, list_to_padded_into(list, 0.0f, Tensor<float>(Shape{2, 3, 4})),
        {"list_to_padded_into", "out has shape [2, 3, 4]"});
  AUDIT(ShapeError, list_to_packed_into(list, Tensor<float>(Shape{4, 3})), {"list_to_packed_into"});
  AUDIT(ShapeError, list_to_padded_into(std::vector<Tensor<float>>{}, 0.0f, ones({1, 2, 3})),
        {"list_to_padded_into", "out has shape [1, 2, 3]", "0 tensors"});
  AUDIT(ValueError, pad_sequence(std::vector<Tensor<float>>{}, 0.0f),
        {"pad_sequence", "the list is empty"});
  AUDIT(ShapeError, pad_sequence(std::vector<Tensor<float>>{ones({2, 3}), ones({4, 2})}, 0.0f),
        {"pad_sequence", "element 1", "[4, 2]", "element 0 has [2, 3]"});
  AUDIT(ShapeError, pad_sequence(std::vector<Tensor<float>>{Tensor<float>(Shape{})}, 0.0f),
        {"pad_sequence", "element 0", "rank 0"});
  AUDIT(
      ShapeError, list_to_padded(std::vector<Tensor<float>>{ones({4}), ones({2})}, 0.0f),
      {"list_to_padded", "last dimension 4", "got 2 at index 1", "pad_sequence", "unsqueeze(-1)"});

  const Tensor<float> padded = ones({2, 3, 3});
  AUDIT(ShapeError, padded_to_list(padded, ints({2, 2}, {1, 1, 1, 1})),
        {"PaddedBatch", "shape_per_tensor", "[2, 2]", "[2, 1]"});
  AUDIT(ValueError, padded_to_list(padded, ints({2, 1}, {1, -1})),
        {"PaddedBatch", "shape_per_tensor[1][0] = -1"});
  AUDIT(ShapeError, padded_to_packed(padded, ints({2, 1}, {1, 4})),
        {"PaddedBatch", "shape_per_tensor[1][0] = 4", "padded size 3"});
  AUDIT(ShapeError, PaddedBatch<float>(ones({3}), ints({3, 0}, {})), {"PaddedBatch", "rank >= 2"});

  const Tensor<float> packed = ones({5, 3});
  const Tensor<index_t> rows = ints({2, 1}, {2, 3});
  AUDIT(ValueError, packed_to_list(packed, rows, ints({3}, {1, 2, 5})),
        {"PackedBatch", "first_idx[0] = 1", "expected 0"});
  AUDIT(ValueError, packed_to_list(packed, ints({2, 1}, {3, 3}), ints({3}, {0, 3, 2})),
        {"PackedBatch", "must not decrease", "first_idx[2] = 2"});
  AUDIT(ValueError, packed_to_list(packed, rows, ints({3}, {0, 2, 6})),
        {"PackedBatch", "element 1 spans 4 rows", "holds 3"});
  AUDIT(ValueError, packed_to_list(packed, ints({2, 1}, {2, 4}), ints({3}, {0, 2, 6})),
        {"PackedBatch", "first_idx[2] = 6", "5 rows"});
  AUDIT(ShapeError, packed_to_list(packed, rows, ints({4}, {0, 2, 5, 5})),
        {"PackedBatch", "first_idx has shape [4]", "[3]"});
  AUDIT(ShapeError, packed_to_padded(ones({5, 3, 1}), rows, ints({3}, {0, 2, 5}), 0.0f),
        {"PackedBatch", "2-d"});
  AUDIT(ShapeError, packed_to_padded(packed, rows, ints({3}, {0, 2, 5}), 0.0f, {1, 1}),
        {"fill_max_shape", "max_shape [1, 1]"});
  AUDIT(ShapeError, packed_to_list(packed, ints({2, 2}, {huge, 4, 1, 1}), ints({3}, {0, 2, 5})),
        {"PackedBatch", "overflows"});
  AUDIT(ShapeError, tile_to_packed(ones({2, 2}), ints({2}, {1, 1})),
        {"tile_to_packed", "values", "[2, 2]"});
  AUDIT(ShapeError, tile_to_packed(ones({2}), ints({3}, {1, 1, 1})),
        {"tile_to_packed", "numel_per_tensor has shape [3]"});
  AUDIT(ValueError, tile_to_packed(ones({2}), ints({2}, {1, -1})), {"get_first_idx", "-1"});

  const PackedBatch<float> batch = list_to_packed(list);
  AUDIT(IndexError, batch.element(2), {"PackedBatch::element", "element index 2"});
  AUDIT(IndexError, list_to_padded(list, 0.0f).element(-1), {"PaddedBatch::element", "-1"});
  AUDIT(IndexError, ExactBatch<float>(ones({2, 2, 3})).element(2), {"ExactBatch::element", "2"});
  AUDIT(ShapeError, ExactBatch<float>(ones({3})), {"ExactBatch", "rank >= 2"});
  AUDIT(ShapeError, to_exact(batch), {"to_exact", "element 1", "[3, 3]", "[2, 3]"});
  AUDIT(ShapeError, to_exact(list_to_packed(std::vector<Tensor<float>>{})), {"to_exact", "empty"});
}

TEST_CASE("audit: pad", "[audit]") {
  const Tensor<float> x = ones({2, 4});
  AUDIT(ValueError, pad(x, std::vector<index_t>{1}), {"pad", "[1]"});
  AUDIT(ShapeError, pad(x, {1, 1, 1, 1, 1, 1}),
        {"pad", "[1, 1, 1, 1, 1, 1]", "3 (before, after) pairs", "rank 2"});
  AUDIT(ValueError, pad(x, {4, 1}, PadMode::reflect),
        {"pad", "(4, 1) at dim 1", "size 4", "reflect"});
  AUDIT(ValueError, pad(x, {5, 0}, PadMode::circular), {"pad", "(5, 0)", "at most its size 4"});
  AUDIT(ValueError, pad(x, {0, 5}, PadMode::symmetric), {"pad", "(0, 5)", "symmetric"});
  AUDIT(ValueError, pad(ones({2, 0}), {1, 1}, PadMode::replicate),
        {"pad", "replicate", "size is 0"});
  AUDIT(ValueError, pad(ones({2, 0}), {1, 1}, PadMode::reflect), {"pad", "reflect"});
  AUDIT(ShapeError, pad(x, {-3, -2}), {"pad", "(-3, -2) at dim 1", "negative"});
  AUDIT(ShapeError, pad(x, {int64_max, 1}), {"pad", "overflows"});
  AUDIT(ValueError, pad(x, {1, 1}, PadMode::reflect, 2.0f), {"pad", "value"});
  AUDIT(ValueError, pad(x, {1, 1}, static_cast<PadMode>(9)), {"pad", "mode"});
  AUDIT(ShapeError, pad(x, std::vector<std::array<index_t, 2>>{{1, 1}}), {"pad", "1"});
  AUDIT(ValueError, pad(x, {{0, 0}, {-1, 5}}, PadMode::reflect), {"pad", "(-1, 5)", "reflect"});
  AUDIT(ValueError, pad_shape(x.shape(), {4, 4}, PadMode::reflect), {"pad_shape", "(4, 4)"});
  Tensor<float> out(Shape{2, 5});
  AUDIT(ShapeError, pad_into(x.view(), {1, 1}, out.view()),
        {"pad_into", "out has shape [2, 5]", "[2, 6]"});
  Tensor<float> same = ones({2, 6});
  Tensor<float> expanded = ones({1, 6}).expand({2, 6});
  AUDIT(ValueError, pad_into(x.view(), {1, 1}, expanded.view()),
        {"pad_into", "out", "strides [0, 1]", "one address"});
  const auto batch = list_to_padded(std::vector<Tensor<float>>{ones({2, 3}), ones({1, 3})}, 0.0f);
  AUDIT(ValueError, pad(batch, {0, 0, 2, 0}, PadMode::reflect), {"pad", "(2, 0)", "element 0"});
  AUDIT(ShapeError, pad(to_packed(batch), {1, 1, 1, 1, 1, 1}), {"pad", "3 (before, after) pairs"});
}

TEST_CASE("audit: scatter family and segment reductions", "[audit]") {
  const Tensor<float> x = ones({3, 2});
  AUDIT(IndexError, scatter(x, ints({2}, {0, 3}), ones({2, 2})),
        {"scatter", "index", "3", "dim 0 of x"});
  AUDIT(IndexError, scatter(x, ints({2}, {-1, 0}), ones({2, 2})), {"scatter", "index", "-1"});
  AUDIT(ShapeError, scatter(x, ints({2}, {0, 1}), ones({2, 3})),
        {"scatter", "updates has shape [2, 3]", "[2, 2]"});
  AUDIT(ShapeError, scatter(x, ints({2, 2}, {0, 1, 0, 1}), ones({4, 2})),
        {"scatter", "index must be", "[2, 2]"});
  AUDIT(ShapeError, scatter(Tensor<float>(Shape{}), ints({1}, {0}), ones({1})),
        {"scatter", "rank >= 1"});
  AUDIT(TypeError,
        scatter(Tensor<bool>(Shape{3, 2}), ints({1}, {0}), Tensor<bool>(Shape{1, 2}), false),
        {"scatter", "overwrite=false", "bool"});
  Tensor<float> expanded = ones({1, 2}).expand({3, 2});
  AUDIT(ValueError, scatter_(expanded, ints({1}, {0}), ones({1, 2})), {"scatter_", "x"});
  AUDIT(ShapeError, scatter_nd_add(x, ints({1, 3}, {0, 0, 0}), ones({1})),
        {"scatter_nd_add", "index.shape[-1] = 3", "rank 2"});
  AUDIT(IndexError, scatter_nd_add(x, ints({1, 2}, {0, 2}), ones({1})),
        {"scatter_nd_add", "index", "2", "dim 1 of x"});
  AUDIT(ShapeError, scatter_nd_add(x, ints({1, 1}, {0}), ones({1, 3})),
        {"scatter_nd_add", "updates has shape [1, 3]"});
  AUDIT(ShapeError, scatter_nd_add(x, Tensor<index_t>(Shape{}), ones({1})),
        {"scatter_nd_add", "rank >= 1"});
  AUDIT(IndexError, scatter_reduce(x, 2, ints({1, 1}, {0}), ones({1, 1}), Reduce::sum),
        {"scatter_reduce", "dim 2"});
  AUDIT(IndexError, scatter_reduce(x, 0, ints({1, 1}, {3}), ones({1, 1}), Reduce::sum),
        {"scatter_reduce", "index", "3"});
  AUDIT(ShapeError, scatter_reduce(x, 0, ints({1, 3}, {0, 0, 0}), ones({1, 2}), Reduce::sum),
        {"scatter_reduce", "index"});
  AUDIT(ShapeError, scatter_reduce(x, 0, ints({3}, {0, 0, 0}), ones({3, 2}), Reduce::sum),
        {"scatter_reduce", "same number of"});
  AUDIT(ValueError, scatter_reduce(x, 0, ints({1, 1}, {0}), ones({1, 1}), static_cast<Reduce>(7)),
        {"scatter_reduce", "reduce"});
  AUDIT(ShapeError, index_add(x, 0, ints({2}, {0, 1}), ones({3, 2})), {"index_add", "source"});
  AUDIT(IndexError, index_add(x, 1, ints({2}, {0, 2}), ones({3, 2})), {"index_add", "index", "2"});
  AUDIT(IndexError, index_add(x, -3, ints({1}, {0}), ones({1, 2})), {"index_add", "dim -3"});

  const Tensor<float> values = ones({5, 2});
  AUDIT(ValueError, segment_reduce(values, ints({3}, {0, 4, 3}), Reduce::sum),
        {"segment_reduce", "first_idx"});
  AUDIT(ValueError, segment_reduce(values, ints({3}, {0, 2, 7}), Reduce::sum),
        {"segment_reduce", "first_idx", "7", "5"});
  AUDIT(ValueError, segment_reduce(values, ints({2}, {1, 5}), Reduce::sum),
        {"segment_reduce", "first_idx[0] = 1"});
  AUDIT(ShapeError, segment_reduce(values, ints({1, 2}, {0, 5}), Reduce::sum),
        {"segment_reduce", "first_idx"});
  AUDIT(ValueError, segment_argmax(values, ints({2}, {0, 6})), {"segment_argmax", "first_idx"});
  const auto batch = list_to_padded(std::vector<Tensor<float>>{ones({2, 2}), ones({1, 2})}, 0.0f);
  AUDIT(IndexError, scatter(batch, ints({1}, {1}), ints({1}, {1}), ones({1, 2})),
        {"scatter", "local_index", "1", "element 1"});
  AUDIT(IndexError, scatter(batch, ints({1}, {2}), ints({1}, {0}), ones({1, 2})),
        {"scatter", "element_index", "2"});
}

TEST_CASE("audit: space_to_batch_nd and batch_to_space_nd", "[audit]") {
  const Tensor<float> x = ones({1, 4, 4, 1});
  AUDIT(ValueError, space_to_batch_nd(x, {0, 2}, {{0, 0}, {0, 0}}),
        {"space_to_batch_nd", "block_shape", "0"});
  AUDIT(ValueError, space_to_batch_nd(x, {2, 2}, {{-1, 1}, {0, 0}}),
        {"space_to_batch_nd", "paddings", "-1"});
  AUDIT(ShapeError, space_to_batch_nd(x, {2, 2}, {{0, 0}}), {"space_to_batch_nd", "paddings", "2"});
  AUDIT(ShapeError, space_to_batch_nd(x, {3, 2}, {{0, 0}, {0, 0}}),
        {"space_to_batch_nd", "divisible", "3"});
  AUDIT(ShapeError, space_to_batch_nd(ones({4, 4}), {2, 2}, {{0, 0}, {0, 0}}),
        {"space_to_batch_nd", "rank"});
  constexpr index_t b32 = index_t(1) << 32;  // a block product of 2^64
  AUDIT(ShapeError, space_to_batch_nd(x, {b32, b32}, {{0, b32 - 4}, {0, b32 - 4}}),
        {"space_to_batch_nd", "overflow"});
  AUDIT(ShapeError, space_to_batch_nd_shape(x.shape(), {3, 2}, {{0, 0}, {0, 0}}),
        {"space_to_batch_nd_shape"});
  AUDIT(ShapeError, batch_to_space_nd(ones({3, 2, 2, 1}), {2, 2}, {{0, 0}, {0, 0}}),
        {"batch_to_space_nd", "batch", "3", "4"});
  AUDIT(ValueError, batch_to_space_nd(ones({4, 2, 2, 1}), {2, 2}, {{0, -1}, {0, 0}}),
        {"batch_to_space_nd", "crops", "-1"});
  AUDIT(ShapeError, batch_to_space_nd(ones({4, 2, 2, 1}), {2, 2}, {{3, 2}, {0, 0}}),
        {"batch_to_space_nd", "crops"});
  Tensor<float> out(Shape{4, 2, 2, 2});
  AUDIT(ShapeError, space_to_batch_nd_into(x.view(), {2, 2}, {{0, 0}, {0, 0}}, out.view()),
        {"space_to_batch_nd_into", "[4, 2, 2, 2]"});
  const auto batch =
      list_to_padded(std::vector<Tensor<float>>{ones({2, 2, 1}), ones({2, 1, 1})}, 0.0f);
  AUDIT(ValueError, space_to_batch_nd(batch, {2}, {{1, 1}}), {"space_to_batch_nd", "pad"});
}

TEST_CASE("audit: TensorDict", "[audit]") {
  TensorDict td(Shape{2, 3});
  td.set("images", ones({2, 3, 4}));
  AUDIT(ShapeError, td.set("contact", ones({3})),
        {"batch dimension mismatch", "batch_size=[2, 3]", "value.shape=[3]", "'contact'"});
  AUDIT(ShapeError, td.set_batch_size(Shape{4}), {"images", "[2, 3, 4]", "[4]"});
  AUDIT(KeyError, td.get<float>("missing"), {"missing"});
  AUDIT(TypeError, td.get<double>("images"), {"TensorDict::get", "images", "float32", "float64"});
  AUDIT(TypeError, td.get_dict("images"), {"TensorDict::get_dict", "images"});
  AUDIT(IndexError, TensorDict().index({0}), {"batch_dims==0"});
  AUDIT(IndexError, td.index({2}), {"index 2", "size 2"});
  AUDIT(IndexError, td.index({0, 0, 0}), {"too many indices"});
  AUDIT(IndexError, td.index({Tensor<bool>(Shape{3}, true)}), {"mask"});
  AUDIT(ShapeError, td.reshape({5}), {"TensorDict::reshape", "[5]", "6"});
  AUDIT(ShapeError, td.permute({0}), {"permute"});
  AUDIT(IndexError, td.transpose(0, 2), {"dim 2"});
  AUDIT(ShapeError, td.expand({4, 3}), {"expand"});
  AUDIT(ValueError, td.chunk(0), {"chunk", "0"});
  TensorDict other(Shape{2});
  other.set("images", ones({2, 4}));
  AUDIT(ShapeError, TensorDict::stack({td, other}), {"stack"});
  TensorDict different(Shape{2, 3});
  different.set("labels", ones({2, 3}));
  AUDIT(KeyError, TensorDict::cat({td, different}), {"cat"});
  TensorDict locked = td.clone();
  locked.lock_();
  AUDIT(Error, locked.set("new", ones({2, 3})), {"locked"});
  AUDIT(ValueError, td.set_names({"a", "a"}), {"names", "a"});
  AUDIT(ShapeError, td.index_put({0}, TensorDict(Shape{5})), {"index_put"});
}

TEST_CASE("audit: sizes whose product overflows are rejected even with a size-0 dim", "[audit]") {
  // {2^62, 2^62, 0} holds no elements, but its strides (and every later size product) would
  // overflow: every shape is checked as a whole, so no view can carry such sizes.
  const Tensor<float> empty(Shape{1, 1, 0});
  AUDIT(ShapeError, empty.expand({huge, huge, 0}), {"numel", "overflows"});
  AUDIT(ShapeError, empty.reshape({0, huge, huge}), {"reshape", "overflows"});
  AUDIT(ShapeError, Tensor<float>(Shape{huge, huge, 0}), {"overflow"});
  AUDIT(ShapeError, Tensor<float>::borrow(nullptr, Shape{0, huge, huge}, Strides{0, 0, 0}),
        {"numel", "[0, 4611686018427387904, 4611686018427387904]", "overflows"});
  CHECK(Tensor<float>(Shape{0, 4}).unflatten(1, {2, 2}).shape() == Shape{0, 2, 2});
  // Unflattening an empty dim into huge sizes is a valid empty view (batch_to_space_nd's
  // intermediate of an empty batch); its strides must not overflow.
  CHECK(Tensor<float>(Shape{0, 3}).unflatten(0, {0, huge}).shape() == Shape{0, huge, 3});
  // But a tensor of such a shape is not: (0, 2^62, 3) is rejected as (2^62, 3, 0) is, whatever
  // the order of the dims (fuzz_batch once reached it through a packed element).
  AUDIT(ShapeError,
        packed_to_list(Tensor<float>(Shape{0, 3}), ints({1, 2}, {0, huge}), ints({2}, {0, 0})),
        {"numel", "overflows"});
}

#ifdef TBATCH_AUDIT_WITH_IO
TEST_CASE("audit: io (safetensors files)", "[audit]") {
  auto file_with = [](const std::string& header, const std::string& data = "") {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
      out[std::size_t(i)] = char((std::uint64_t(header.size()) >> (8 * i)) & 0xff);
    return out + header + data;
  };
  auto parsed = [](const std::string& bytes) { return io::parse(bytes.data(), bytes.size()); };
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  AUDIT(FormatError,
        parsed(file_with(R"({"x":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,0]}})")),
        {"io::parse", "tensor 'x'", "shape entry that is not a size: an array"});
  AUDIT(FormatError,
        parsed(file_with(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"e":)" + deep +
                         "}}")),
        {"io::parse", "nests JSON deeper than 256"});
  AUDIT(FormatError, parsed(file_with(std::string("{}\0garbage", 10))),
        {"io::parse", "NUL byte", "at byte 2"});
  AUDIT(FormatError, parsed(file_with("\xEF\xBB\xBF{}")), {"io::parse", "not a JSON object"});
  AUDIT(FormatError, parsed(file_with("{} x")), {"io::parse", "not a JSON object", "byte 4"});
  std::string rank65 = "1";
  for (int d = 1; d < 65; ++d)
    rank65 += ",1";
  AUDIT(FormatError,
        parsed(file_with(R"({"x":{"dtype":"U8","shape":[)" + rank65 + R"(],"data_offsets":[0,1]}})",
                         "\x07")),
        {"io::parse", "tensor 'x'", "more than 64 dims"});
  AUDIT(FormatError,
        parsed(file_with(R"({"x":{"dtype":"F32","shape":[0,4611686018427387904,)"
                         R"(4611686018427387904],"data_offsets":[0,0]}})")),
        {"io::parse", "tensor 'x'", "size overflows",
         "[0, 4611686018427387904, 4611686018427387904]"});
  AUDIT(FormatError,
        parsed(file_with(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                         R"("x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                         "ab")),
        {"io::parse", "tensor 'x'", "twice"});
  AUDIT(FileError, io::load("/dev/null"), {"io::load", "/dev/null", "not a regular file"});
  io::TensorFile deep_tensor;
  deep_tensor.tensors.emplace("deep", AnyTensor(Tensor<float>(Shape::filled(65, 1))));
  AUDIT(ValueError,
        io::save(std::filesystem::temp_directory_path() / "tbatch_audit_unwritten.safetensors",
                 deep_tensor),
        {"io::save", "tensor 'deep'", "65 dims", "at most 64"});
  io::TensorFile file;
  io::put(file, "b", list_to_packed(std::vector<Tensor<float>>{ones({2, 3})}));
  AUDIT(TypeError, io::get<PaddedBatch<float>>(file, "b"),
        {"io::get", "batch 'b'", "stored packed", "not padded"});
  AUDIT(TypeError, io::get<PackedBatch<double>>(file, "b"),
        {"io::get", "tensor 'b'", "float32", "float64"});
  file.tensors.insert_or_assign("b.first_idx", AnyTensor(Tensor<float>({2}, {0, 2})));
  AUDIT(FormatError, io::get<PackedBatch<float>>(file, "b"),
        {"io::get", "tensor 'b.first_idx'", "float32", "expected int64"});
  io::TensorFile structures;
  structures.metadata["tbatch.tensordict"] = deep;
  structures.metadata["tbatch.ragged_tensordict"] = "{\"layout\":" + deep + "}";
  AUDIT(FormatError, io::get_tensordict(structures),
        {"io::get_tensordict", "'tbatch.tensordict'", "nests JSON deeper than 256"});
  AUDIT(FormatError, io::get_ragged_tensordict(structures),
        {"io::get_ragged_tensordict", "'tbatch.ragged_tensordict'", "nests JSON deeper than 256"});
  io::TensorFile ragged;
  io::put(ragged, TensorDict::stack_ragged(
                      {TensorDict({{"p", ones({1, 3})}}), TensorDict({{"p", ones({2, 3})}})},
                      RaggedLayout::packed));
  std::string& text = ragged.metadata.at("tbatch.ragged_tensordict");
  text.replace(text.find("\"unit_last_dim\":false"), 21, "\"unit_last_dim\":true");
  AUDIT(FormatError, io::get_ragged_tensordict(ragged),
        {"io::get_ragged_tensordict", "entry 'p'", "unit_last_dim", "last dim is 3"});
}
#endif

#ifdef TBATCH_AUDIT_WITH_DLPACK
TEST_CASE("audit: DLPack", "[audit]") {
  // An exported tensor whose descriptor is then made bad, as a faulty producer would.
  Tensor<bool> flags(Shape{3});
  reinterpret_cast<unsigned char*>(flags.data())[2] = 2;  // written as a byte, never read as bool
  DLPackPtr bools = to_dlpack(flags);
  AUDIT(ValueError, from_dlpack<bool>(std::move(bools)),
        {"from_dlpack", "flat position 2", "byte 2", "0 or 1"});
  REQUIRE(bools != nullptr);  // rejected: still the caller's

  DLPackPtr wide = to_dlpack(Tensor<float>(Shape{2, 2}));
  wide->dl_tensor.strides[0] = int64_max;
  wide->dl_tensor.strides[1] = std::numeric_limits<index_t>::min();
  AUDIT(ShapeError, from_dlpack<float>(std::move(wide)), {"from_dlpack", "strides", "spans more"});

  DLPackPtr floats = to_dlpack(Tensor<float>(Shape{2}));
  AUDIT(TypeError, from_dlpack<double>(std::move(floats)), {"from_dlpack", "float32", "float64"});
  REQUIRE(floats != nullptr);

  AUDIT(ValueError, any_from_dlpack(DLPackPtr{}), {"any_from_dlpack", "null"});
  AUDIT(ValueError, to_dlpack(Tensor<float>(Shape{2}), static_cast<DLPackStrides>(7)),
        {"to_dlpack", "7"});
}
#endif
