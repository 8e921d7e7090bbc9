// Every public header, with its templates instantiated for the twelve element types, compiled
// (never run) under -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror:
// projects that add tbatch with add_subdirectory or FetchContent see its headers as their own,
// so a warning here would be a warning (or an error) in their builds. Most of these warnings
// appear only when a template is instantiated, hence the calls below.
// TBATCH_STRICT_WITH_MPI / _IO / _DLPACK: the optional headers' targets exist.

#include <array>
#include <span>
#include <sstream>
#include <vector>

#include "tbatch/tbatch.hpp"

#include "tbatch/base/block_cache.hpp"
#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/base/small_vector.hpp"
#include "tbatch/base/storage.hpp"
#include "tbatch/base/streaming_stores.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/dict/ragged_tensor_dict.hpp"
#include "tbatch/dict/tensor_dict.hpp"
#include "tbatch/dict/tensor_dict_entries.hpp"
#include "tbatch/dict/tensor_dict_indexing.hpp"
#include "tbatch/dict/tensor_dict_shape_ops.hpp"
#include "tbatch/dict/tensor_dict_stack.hpp"
#include "tbatch/interop/arrow.hpp"
#include "tbatch/math/elementwise.hpp"
#include "tbatch/math/elementwise_kernel.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/math/map_views.hpp"
#include "tbatch/ops/instantiations.hpp"
#include "tbatch/ops/pad.hpp"
#include "tbatch/ops/scatter.hpp"
#include "tbatch/ops/segment.hpp"
#include "tbatch/ops/space_to_batch.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/eigen.hpp"
#include "tbatch/tensor/eigen_tensor.hpp"
#include "tbatch/tensor/format.hpp"
#include "tbatch/tensor/indexing.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/version.hpp"
#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/constant_rows.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/streaming.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/view_methods.hpp"
#include "tbatch/view/walk.hpp"
#ifdef TBATCH_STRICT_WITH_IO
#include "tbatch/io/safetensors.hpp"
#endif
#ifdef TBATCH_STRICT_WITH_MPI
#include "tbatch/mpi.hpp"
#endif
#ifdef TBATCH_STRICT_WITH_DLPACK
#include "tbatch/dlpack.hpp"
#endif

// The tbatch::compiled instantiations, as src/compiled.cpp defines them.
namespace tbatch {
#define TBATCH_DETAIL_INSTANTIATION_KIND
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DETAIL_INSTANTIATE)
#undef TBATCH_DETAIL_INSTANTIATION_KIND
}  // namespace tbatch

// Every member of the class templates.
#define TBATCH_STRICT_CLASSES(T, ...)                         \
  template class tbatch::Tensor<T>;                           \
  template class tbatch::ViewMethods<tbatch::Tensor<T>>;      \
  template class tbatch::StridedView<T>;                      \
  template class tbatch::StridedView<const T>;                \
  template class tbatch::ViewMethods<tbatch::StridedView<T>>; \
  template class tbatch::ExactBatch<T>;                       \
  template class tbatch::PaddedBatch<T>;                      \
  template class tbatch::PackedBatch<T>;
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_STRICT_CLASSES)
#undef TBATCH_STRICT_CLASSES

namespace tbatch_strict {

using namespace tbatch;

using Pairs = std::vector<std::array<index_t, 2>>;

template <class B>
void batch_calls(const B& batch, Tensor<typename B::value_type> values) {
  using T = typename B::value_type;
  const T zero = T(0);
  (void)to_packed(batch);
  (void)to_padded(batch, zero, {});
  (void)to_exact(batch);
  (void)map_elements(batch, [](Tensor<T> t) { return t; });
  (void)map_elements(
      batch, [](Tensor<T> t) { return t; }, zero);
  (void)pad(batch, std::vector<index_t>{1, 1}, PadMode::reflect, zero);
  (void)pad(batch, Pairs{{1, 1}}, PadMode::constant, zero);
  (void)pad(batch, {{1, 1}}, PadMode::circular, zero);
  const Tensor<index_t> index({2}, std::vector<index_t>{0, 1});
  B copy = scatter(batch, index, index, values, false);
  scatter_(copy, index, index, values, true);
}

template <class T>
void tensor_calls() {
  const T zero = T(0);
  const T one = T(1);
  Tensor<T> x({2, 3}, one);
  const Tensor<T>& cx = x;
  (void)Tensor<T>::arange(4);
  (void)Tensor<T>::full({2}, one);
  (void)Tensor<T>::zeros({2});
  (void)Tensor<T>(Shape{2}, std::vector<T>{zero, one});
  (void)Tensor<T>::from_eigen(Eigen::Array<T, 2, 2>::Constant(one));
  (void)x(1, 2);
  (void)cx(1, 2);
  (void)x(index_t{1}, std::size_t{2});
  (void)x.at({1, 2});
  (void)cx.at({1, 2});
  (void)x.matrix();
  (void)cx.matrix();
  (void)x.flat();
  (void)(x == cx);
  (void)(x != cx);
  std::ostringstream out;
  out << x;

  // Borrowed memory, lists of views and casts.
  std::array<T, 6> buffer{};
  (void)Tensor<T>::borrow(buffer.data(), Shape{2, 3});
  (void)Tensor<T>::borrow(buffer.data() + 5, Shape{2, 3}, Strides{-3, -1}, nullptr);
  (void)Tensor<T>::borrow(std::span<T>(buffer.data(), buffer.size()), Shape{3, 2});
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> m(2, 2);
  (void)borrow_eigen(m);
  const std::array<StridedView<const T>, 2> views{eigen_view(m), cx.view()};
  (void)list_to_padded(views, zero);
  (void)list_to_packed(views);
  (void)list_to_packed_into(std::vector<StridedView<T>>{x.view()}, Tensor<T>({2, 3}, zero));
  (void)x.template cast<float>();
  (void)x.template cast<bool>();
  (void)x.template cast<Eigen::half>();
  (void)x.template cast<std::int64_t>();
#ifdef TBATCH_STRICT_WITH_DLPACK
  (void)from_dlpack<T>(to_dlpack(x));
  (void)any_from_dlpack(to_dlpack(AnyTensor(x)));
  (void)from_dlpack<T>(to_dlpack(x, DLPackStrides::non_negative));
#endif

  // Indexing: every kind of index, read, written and filled.
  const Tensor<index_t> positions({2}, std::vector<index_t>{0, 1});
  const Tensor<bool> mask({3}, std::vector<bool>{true, false, true});
  (void)x.index({1, Slice{0, 2}});
  (void)x.index({Ellipsis, NewAxis, positions});
  (void)x.index({Slice{}, mask});
  x.index_put({positions}, Tensor<T>({3}, one));
  x.index_fill({0, mask}, zero);

  // The engine on views.
  StridedView<T> v = x.view();
  copy(cx.view(), v);
  copy(v, v.transpose(0, 1).transpose(0, 1));
  fill(v, one);
  for_each([](T& a, const T& b) { a = b; }, v, cx.view());

  // Scatter family and segment reductions.
  const Tensor<index_t> rows({2, 1}, std::vector<index_t>{0, 1});
  (void)scatter(x, positions, x.narrow(0, 0, 2), false);
  scatter_(x, positions, x.narrow(0, 0, 2), true);
  (void)scatter_nd_add(x, rows, x.narrow(0, 0, 2));
  scatter_nd_add_(x, rows, x.narrow(0, 0, 2));
  const Tensor<index_t> index2({2, 3}, index_t{0});
  for (Reduce reduce : {Reduce::sum, Reduce::prod, Reduce::mean, Reduce::amax, Reduce::amin}) {
    (void)scatter_reduce(x, 0, index2, cx, reduce, false);
    scatter_reduce_(x, 1, index2, cx, reduce, true);
    (void)segment_reduce(x, positions, reduce);
  }
  (void)index_add(x, 0, positions, cx, one);
  index_add_(x, 1, Tensor<index_t>({3}, index_t{0}), cx, one);
  (void)segment_argmax(x, positions);
  (void)segment_argmin(x, positions);

  // Pad and space_to_batch on tensors.
  (void)pad(x, std::vector<index_t>{1, 1}, PadMode::symmetric, zero);
  (void)pad(x, Pairs{{1, 1}, {0, 1}}, PadMode::replicate, zero);
  Tensor<T> padded(pad_shape(x.shape(), {1, 1}));
  pad_into(cx.view(), {1, 1}, padded.view(), PadMode::constant, one);
  const std::vector<index_t> block{2};
  (void)space_to_batch_nd(x, block, Pairs{{0, 1}}, one);
  (void)batch_to_space_nd(x, block, Pairs{{0, 0}});
  Tensor<T> blocked(space_to_batch_nd_shape(x.shape(), block, Pairs{{0, 1}}));
  space_to_batch_nd_into(cx.view(), block, Pairs{{0, 1}}, blocked.view(), one);
  Tensor<T> unblocked(batch_to_space_nd_shape(blocked.shape(), block, Pairs{{0, 1}}));
  batch_to_space_nd_into(cx.view(), block, Pairs{{0, 1}}, unblocked.view());

  // Batches: conversions, metadata and the ops on every layout.
  const std::vector<Tensor<T>> list{x, x.narrow(0, 0, 1)};
  const PaddedBatch<T> padded_batch = list_to_padded(list, zero);
  const PackedBatch<T> packed = list_to_packed(list);
  const ExactBatch<T> exact({Tensor<T>({2, 2, 3}, one)});
  (void)padded_to_list(padded_batch.data(), padded_batch.shape_per_tensor());
  (void)packed_to_list(packed.data(), packed.shape_per_tensor(), packed.first_idx());
  (void)tile_to_packed(x, positions);
  (void)get_shape_per_tensor(list);
  (void)get_first_idx(positions);
  (void)fill_max_shape(packed.shape_per_tensor());
  batch_calls(padded_batch, x);
  batch_calls(packed, x);
  batch_calls(exact, x);
  (void)space_to_batch_nd(padded_batch, block, Pairs{{0, 1}}, one);
  (void)batch_to_space_nd(padded_batch, block, Pairs{{0, 0}});
  (void)space_to_batch_nd(exact, block, Pairs{{0, 1}}, one);
  (void)batch_to_space_nd(exact, block, Pairs{{0, 0}});
  for (Reduce reduce : {Reduce::sum, Reduce::amax})
    (void)segment_reduce(packed, reduce);
  (void)segment_argmax(packed);
  (void)segment_argmin(packed);

  // Eigen Tensor module interop.
  Eigen::Tensor<T, 2, Eigen::RowMajor> eigen_tensor(2, 3);
  (void)view_of(eigen_tensor);
  (void)view_of(Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>>(eigen_tensor.data(), 2, 3));
  (void)from_eigen_tensor(eigen_tensor);
  (void)as_eigen_tensor<2>(x);

  // AnyTensor, TensorDict and RaggedTensorDict members templated on the element type.
  AnyTensor any(x);
  (void)any.holds<T>();
  (void)any.get<T>();
  any.visit([](const auto& t) { (void)t.numel(); });
  out << any;
  TensorDict td(Shape{2});
  td.set("x", x);
  (void)td.get<T>("x");
  td.index_put({0}, Tensor<T>({3}, one));
  td.index_put({1}, one);
  const RaggedTensorDict ragged = TensorDict::stack_ragged({td, td}, RaggedLayout::packed);
  (void)ragged.get<T>("x");
  (void)ragged.to_padded<T>("x", zero);
  (void)ragged.to_packed<T>("x");
  (void)ragged.to_list<T>("x");
  std::ostringstream printed;
  printed << padded_batch << packed << exact << ragged << AnyTensor(x);

#ifdef TBATCH_STRICT_WITH_IO
  io::TensorFile file;
  io::put(file, "padded", padded_batch);
  io::put(file, "packed", packed);
  io::put(file, "exact", exact);
  (void)io::get<PaddedBatch<T>>(file, "padded");
  (void)io::get<PackedBatch<T>>(file, "packed");
  (void)io::get<ExactBatch<T>>(file, "exact");
#endif

#ifdef TBATCH_STRICT_WITH_DLPACK
  (void)from_dlpack<PaddedBatch<T>>(to_dlpack(padded_batch));
  (void)from_dlpack<PackedBatch<T>>(to_dlpack(packed));
  (void)from_dlpack<ExactBatch<T>>(to_dlpack(exact));
#endif
  (void)padded_batch.template cast<double>();
  (void)packed.template cast<std::int32_t>();
  (void)exact.template cast<Eigen::bfloat16>();

#ifdef TBATCH_STRICT_WITH_MPI
  MPI_Comm comm = MPI_COMM_WORLD;
  (void)mpi::datatype_of<T>();
  (void)mpi::allgather(comm, packed);
  (void)mpi::allgather(comm, padded_batch, zero);
  (void)mpi::gather(comm, 0, packed);
  (void)mpi::scatter_balanced(comm, 0, packed);
  (void)mpi::all_to_all(comm, packed, positions);
  (void)mpi::all_to_all(comm, padded_batch, positions, zero);
  (void)mpi::rebalance(comm, packed);
  (void)mpi::bucket_by_size(comm, packed);
#endif
}

// The non-template entry points of the optional headers.
void optional_calls() {
#ifdef TBATCH_STRICT_WITH_IO
  io::TensorFile file;
  const TensorDict td(Shape{2});
  io::put(file, td);
  (void)io::get_tensordict(file);
  io::put(file, TensorDict::stack_ragged({td, td}));
  (void)io::get_ragged_tensordict(file);
  io::save("strict_warnings.safetensors", file);
  io::save("strict_warnings.safetensors", td);
  (void)io::load("strict_warnings.safetensors", io::Mmap::yes);
  (void)io::load_tensor("strict_warnings.safetensors", "x");
  (void)io::load_tensordict("strict_warnings.safetensors");
  const char bytes[8] = {};
  (void)io::parse(bytes, sizeof bytes);
#endif
}

/// The maths of tbatch/math/ that T accepts.
template <class T>
void reduction_calls(const Tensor<T>& a, const Tensor<T>& b) {
  (void)sum(a), (void)sum(a, {0, 1}, true), (void)cumsum(a, -1), (void)a.item();
  (void)stack(std::vector<Tensor<T>>{a, a}, 1), (void)cat(std::vector<Tensor<T>>{a, a}, 1);
  (void)split(a, 2, 1), (void)chunk(a, 2), (void)zeros_like(a), (void)ones_like(a);
  (void)full_like(a, ScalarOf<T>(1)), (void)zeros<T>({2}), (void)ones<T>({2});
  if constexpr (ArithmeticElement<T>) {
    (void)prod(a, 1), (void)amax(a), (void)amin(a, 0, true), (void)argmax(a, 1), (void)argmin(a);
    (void)matmul(a, b), (void)arange<T>(ScalarOf<T>(3));
  }
  if constexpr (FloatingElement<T>)
    (void)mean(a, 1), (void)logsumexp(a, {0, 1}), (void)softmax(a, 1), (void)log_softmax(a, 0);
  if constexpr (std::is_same_v<T, bool>) (void)any(a), (void)all(b, 0);
}

/// The maths on batches (tbatch/ragged/) that T accepts, on a packed and a padded batch.
template <class T, class B>
void ragged_calls(const B& x, const Tensor<T>& dense) {
  (void)(x == x), (void)(x != T(1)), (void)masked_fill(x, x == x, T(0));
  (void)segment_ids(x), (void)ragged_arange(x), (void)sum(x, 0).tensor(), (void)sum(x);
  (void)masked_select(x, x == x), (void)slice(x, 0, -1), (void)split(x, {1, x.batch_size() - 1});
  (void)index_select(x, {0, 0}), (void)cat(std::vector<B>{x, x});
  (void)masked_select(dense, dense == dense);
  if constexpr (ArithmeticElement<T> && std::is_same_v<B, PackedBatch<T>>) {
    const Tensor<T> square({x.batch_size(), x.last_dim(), x.last_dim()}, T(1));
    (void)bmm(x, square), (void)bmm(transpose(x), x), (void)bmm(square, x);
  }
  if constexpr (std::is_same_v<B, PackedBatch<T>>) {
    (void)cu_seqlens(x), (void)max_seqlen(x), (void)triton_batch_inputs(x);
    (void)packed_from_cu_seqlens(x.data(), cu_seqlens(x));
    const Unpadded<T> u = unpad(x.data().unsqueeze(0), Tensor<bool>({1, x.data().size(0)}, true));
    (void)pad_rows(u.rows, u.indices, 1, x.data().size(0)), (void)pack_sequences({1, 2}, 4);
  }
  if constexpr (ArithmeticElement<T>) {
    const ScalarOf<T> s(1);
    B y = x;
    (void)(x + x), (void)(x * s), (void)(s - x), (void)(x - dense), (void)(dense / x), (void)(-x);
    y += x, y -= s, y *= dense;
    (void)abs(x), (void)clamp(x, s, s), (void)maximum(x, x), (void)pow(x, s);
    (void)amax(x, 0, true, s), (void)amin(x, -1, true, s);
  }
  if constexpr (FloatingElement<T>) {
    (void)exp(x), (void)log1p(x), (void)mean(x, 0), (void)logsumexp(x, {0, 1});
    (void)softmax(x, 0), (void)log_softmax(x, -1);
  }
  if constexpr (std::is_same_v<T, bool>)
    (void)any(x, 0), (void)all(x, {0, 1}), (void)logical_not(x);
}

template <class T>
void math_calls() {
  const Tensor<T> a({2, 3}, T(1)), b({3}, T(1));
  Tensor<T> x = a.clone();
  const Tensor<bool> mask({3}, true);
  (void)(a == b), (void)(a != b), (void)(a < b), (void)(a <= b), (void)(a > b), (void)(a >= b);
  (void)(a == T(1));
  (void)where(mask, a, b);
  (void)masked_fill(a, mask, T(0));
  masked_fill_(x, mask, T(0));
  (void)elementwise([](T u, T v) { return u == v; }, a, b);
  if constexpr (ArithmeticElement<T>) {
    const ScalarOf<T> s(1);
    (void)(a + b), (void)(a - b), (void)(a * b), (void)(a / b), (void)(-a);
    (void)(a + s), (void)(s - a), (void)(a * s), (void)(s / a);
    x += b, x -= s, x *= b, x /= s;
    (void)neg(a), (void)abs(a), (void)sign(a), (void)relu(a), (void)floor(a), (void)ceil(a);
    (void)round(a), (void)clamp(a, s, s), (void)minimum(a, b), (void)maximum(a, b);
    (void)pow(a, b), (void)pow(a, s), (void)pow(s, b);
  }
  if constexpr (FloatingElement<T>) {
    (void)sqrt(a), (void)rsqrt(a), (void)exp(a), (void)expm1(a), (void)log(a), (void)log1p(a);
    (void)sin(a), (void)cos(a), (void)tanh(a), (void)sigmoid(a), (void)addcmul(a, a, b);
  }
  if constexpr (std::is_same_v<T, bool>)
    (void)logical_and(a, b), (void)logical_or(a, b), (void)logical_not(a);
  reduction_calls<T>(a, b);
  const std::vector<Tensor<T>> list{a, b.unsqueeze(0)};
  ragged_calls<T>(list_to_packed(list), b);
  ragged_calls<T>(list_to_padded(list, T(0)), b);
  const TensorDict dict({{"a", a}}, {2});
  (void)dict.apply([](const Tensor<T>& t) { return t; });
  (void)TensorDict::stack_ragged({dict, dict}, RaggedLayout::packed).apply([](const auto& t) {
    return t;
  });
}

/// The Arrow C Data Interface for T (tbatch/interop/arrow.hpp; bfloat16 compiles and throws).
template <class T>
void arrow_calls(const PackedBatch<T>& batch, const Tensor<T>& dense) {
  ArrowArray array;
  ArrowSchema schema;
  arrow::export_batch(batch, &array, &schema, {arrow::ListOffsets::int32});
  (void)arrow::value_dtype(&schema);
  (void)arrow::import_batch<T>(&array, &schema, arrow::NullPolicy::empty);
  arrow::export_tensor(dense, &array, &schema, arrow::TensorFormat::fixed_size_list);
  (void)arrow::import_tensor<T>(&array, &schema);
  arrow::export_tensor(AnyTensor(dense), &array, &schema);
  (void)arrow::import_any_tensor(&array, &schema);
}

}  // namespace tbatch_strict

#define TBATCH_STRICT_CALLS(T, ...)               \
  template void tbatch_strict::tensor_calls<T>(); \
  template void tbatch_strict::math_calls<T>();   \
  template void tbatch_strict::arrow_calls<T>(const PackedBatch<T>&, const Tensor<T>&);
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_STRICT_CALLS)
#undef TBATCH_STRICT_CALLS
