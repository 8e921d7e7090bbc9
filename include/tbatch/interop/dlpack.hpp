#pragma once
// DLPack exchange: tensors and batches handed to and taken from any library that speaks DLPack
// (libtorch, TensorFlow, JAX, CuPy, NumPy, TVM, ...) without copying their elements. Optional:
// needs <dlpack/dlpack.h> (Debian's libdlpack-dev) and the CMake target tbatch::tbatch_dlpack.
// docs/interop.md.

#include <dlpack/dlpack.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

namespace detail {

// kDLBool entered DLPack in 0.8; Debian 12 ships 0.6, whose header lacks the name. This one
// hides the global enumerator where present (both are 6).
inline constexpr std::uint8_t kDLBool = 6;

/// The DLPack data type of element type T, from TBATCH_FOR_EACH_ELEMENT_TYPE.
template <class T>
struct DLPackType;
// (base/dtype.hpp checks the bits against sizeof where the element types are complete.)
#define TBATCH_DLPACK_TYPE(type, tag, name, code, bits, ...)                     \
  template <>                                                                    \
  struct DLPackType<type> {                                                      \
    static constexpr DLDataType value{static_cast<std::uint8_t>(code), bits, 1}; \
  };
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DLPACK_TYPE)
#undef TBATCH_DLPACK_TYPE

inline DLDataType dlpack_dtype(DType dtype) {
  return dispatch_dtype(
      dtype, []<class T>(std::type_identity<T>) { return DLPackType<T>::value; }, "to_dlpack");
}

/// The tbatch dtype of a DLPack data type; TypeError naming `function` for one tbatch lacks.
inline DType dtype_from_dlpack(DLDataType type, const char* function) {
  if (type.lanes != 1)
    fail<TypeError>(function, {"the tensor has ", type.lanes,
                               " lanes per element; tbatch reads only lanes == 1"});
#define TBATCH_DLPACK_MATCH(type_, tag, ...)                                                    \
  if (DLPackType<type_>::value.code == type.code && DLPackType<type_>::value.bits == type.bits) \
    return DType::tag;
  TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DLPACK_MATCH)
#undef TBATCH_DLPACK_MATCH
  fail<TypeError>(function,
                  {"DLPack data type code ", int(type.code), " with ", int(type.bits),
                   " bits has no tbatch dtype (expected int 8-64, uint 8-32, float 16-64, "
                   "bfloat 16 or bool 8 bits)"});
}

/// Calls the deleter of the DLManagedTensor it holds (the producer's cleanup).
struct DLPackDeleter {
  void operator()(DLManagedTensor* managed) const {
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
};

}  // namespace detail

/// A DLManagedTensor owned until it is handed on or destroyed (then its deleter runs): what
/// to_dlpack returns and from_dlpack takes. release() hands the raw pointer to a C consumer
/// (at::fromDLPack(p.release())).
using DLPackPtr = std::unique_ptr<DLManagedTensor, detail::DLPackDeleter>;

/// The strides to_dlpack exports.
enum class DLPackStrides {
  /// The tensor's own strides, 0 and negative kept: never a copy (the default).
  as_is,
  /// No negative stride, for consumers that reject them (libtorch, TensorFlow): a tensor that
  /// walks a dim backwards goes out as a compact row-major copy, any other without a copy. A
  /// negative stride that addresses nothing (a dim of size 1, a tensor without elements) is
  /// exported as 1.
  non_negative,
};

namespace detail {

/// What an exported DLManagedTensor points into: the buffer it keeps alive and the arrays its
/// DLTensor refers to.
struct DLPackExport {
  DLManagedTensor managed{};
  std::shared_ptr<Storage> storage;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
};

/// `tensor` as DLPack describes it, `mode` choosing its strides (to_dlpack).
inline DLPackPtr export_dlpack(const AnyTensor& tensor, DLPackStrides mode) {
  if (mode != DLPackStrides::as_is && mode != DLPackStrides::non_negative)
    fail<ValueError>("to_dlpack",
                     {"strides is ", static_cast<int>(mode),
                      "; expected DLPackStrides::as_is or DLPackStrides::non_negative"});
  Layout l = tensor.layout();
  if (mode == DLPackStrides::non_negative) {
    const bool empty = l.shape.numel() == 0;
    bool backwards = false;
    for (std::size_t d = 0; d < l.strides.size(); ++d) {
      if (l.strides[d] >= 0) continue;
      if (empty || l.shape[d] == 1)
        l.strides[d] = 1;  // never stepped along: any stride addresses the same elements
      else
        backwards = true;
    }
    // clone() is row-major: its strides are >= 0.
    if (backwards) return export_dlpack(tensor.clone(), DLPackStrides::as_is);
  }
  const DType dtype = tensor.dtype();
  auto exported = std::make_unique<DLPackExport>();
  exported->storage = tensor.storage();
  exported->shape.assign(l.shape.begin(), l.shape.end());
  exported->strides.assign(l.strides.begin(), l.strides.end());
  DLTensor& t = exported->managed.dl_tensor;
  // The element pointer itself, byte_offset 0: some consumers (torch 1.x) ignore byte_offset.
  t.data = static_cast<char*>(exported->storage->data()) + l.offset * dtype_size(dtype);
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<std::int32_t>(l.dim());
  t.dtype = dlpack_dtype(dtype);
  t.shape = exported->shape.data();
  t.strides = exported->strides.data();
  t.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<DLPackExport*>(self->manager_ctx);
  };
  return DLPackPtr(&exported.release()->managed);
}

/// Holds a received DLManagedTensor for the tensors over its memory; calls its deleter when
/// the last of them is gone, once the receiver has taken it (`taken`). Until then an error
/// leaves the DLManagedTensor with the caller.
struct DLPackOwner {
  DLManagedTensor* managed;
  bool taken = false;
  explicit DLPackOwner(DLManagedTensor* received) : managed(received) {}
  DLPackOwner(const DLPackOwner&) = delete;
  DLPackOwner& operator=(const DLPackOwner&) = delete;
  ~DLPackOwner() {
    if (taken && managed->deleter != nullptr) managed->deleter(managed);
  }
};

/// A received tensor, checked, over its memory, and the owner of that memory.
struct DLPackImport {
  AnyTensor tensor;
  std::shared_ptr<DLPackOwner> owner;
};

/// ValueError naming `function` unless every element of the bool tensor at `first` with layout
/// `l` (which has elements) is byte 0 or 1: any other byte read as bool is undefined behaviour,
/// and a producer's buffer is not ours to rewrite. Reads unsigned chars. The walk's second
/// operand has row-major strides, so its offsets are flat positions and the error names the
/// first bad element in row-major order, whatever order memory is walked in.
inline void check_bool_bytes(const unsigned char* first, const Layout& l, const char* function) {
  const Strides positions = layout::contiguous_strides(l.shape);
  const RunPlan<2> plan = plan_runs<2>(l.shape, {&l.strides, &positions});
  const index_t length = plan.run_length();
  const index_t step = plan.inner_stride(0), position_step = plan.inner_stride(1);
  index_t bad = -1;
  unsigned char bad_byte = 0;
  walk_runs(plan, std::array<index_t, 2>{}, [&](const std::array<index_t, 2>& at) {
    const unsigned char* run = first + at[0];
    unsigned char bits = 0;  // a byte above 1 sets a bit above bit 0
    for (index_t i = 0; i < length; ++i)
      bits |= run[i * step];
    if (bits <= 1) return;
    index_t i = 0;
    while (run[i * step] <= 1)
      ++i;
    // position_step > 0: the run's first bad element is its first in row-major order.
    const index_t position = at[1] + i * position_step;
    if (bad < 0 || position < bad) {
      bad = position;
      bad_byte = run[i * step];
    }
  });
  if (bad >= 0)
    fail<ValueError>(function, {"the bool element at flat position ", bad, " is byte ",
                                int(bad_byte), "; bool elements must be 0 or 1"});
}

/// Checks everything `managed` describes and views its memory, not yet taking it.
inline DLPackImport import_dlpack(DLManagedTensor* managed, const char* function) {
  if (managed == nullptr) fail<ValueError>(function, {"the DLManagedTensor is null"});
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost &&
      t.device.device_type != kDLROCMHost)
    fail<ValueError>(
        function,
        {"the tensor is on device type ", int(t.device.device_type), " (id ", t.device.device_id,
         "); tbatch reads host memory only (kDLCPU, kDLCUDAHost, kDLROCMHost)"});
  const DType dtype = dtype_from_dlpack(t.dtype, function);
  if (t.ndim < 0) fail<ShapeError>(function, {"ndim is ", t.ndim, "; expected >= 0"});
  if (t.ndim > 0 && t.shape == nullptr)
    fail<ValueError>(function, {"shape is null for ndim ", t.ndim});
  Layout l;
  for (std::int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0)
      fail<ShapeError>(function, {"shape[", d, "] is ", t.shape[d], "; sizes must be >= 0"});
    l.shape.push_back(t.shape[d]);
  }
  // Null strides mean row-major (DLPack's compact layout).
  l.strides = t.strides == nullptr ? layout::contiguous_strides(l.shape)
                                   : Strides(t.strides, t.strides + t.ndim);
  // Checked by the same rule as Tensor::borrow; the owner calls no deleter until it is taken.
  auto owner = std::make_shared<DLPackOwner>(managed);
  char* first = t.data == nullptr ? nullptr : static_cast<char*>(t.data) + t.byte_offset;
  std::shared_ptr<Storage> storage =
      borrowed_storage(first, l, dtype_size(dtype), dtype_name(dtype), owner, function);
  if (dtype == DType::boolean && l.shape.numel() > 0)
    check_bool_bytes(reinterpret_cast<const unsigned char*>(first), l, function);
  return {AnyTensor::from_storage(std::move(storage), std::move(l), dtype, function), owner};
}

/// import_dlpack with dtype T (TypeError otherwise).
template <class T>
Tensor<T> import_dlpack_as(DLManagedTensor* managed, const char* function,
                           std::shared_ptr<DLPackOwner>& owner) {
  DLPackImport imported = import_dlpack(managed, function);
  if (imported.tensor.dtype() != dtype_of<T>)
    fail<TypeError>(function,
                    {"the tensor holds ", imported.tensor.dtype(), ", not ", dtype_name_of<T>,
                     "; use any_from_dlpack for a dtype known at run time"});
  owner = std::move(imported.owner);
  return imported.tensor.get<T>(function);
}

}  // namespace detail

/// The tensor as a DLManagedTensor over the same memory (no copy), owned by the DLPackPtr
/// until it is handed on: CPU device, the tensor's shape and strides (in elements; 0 and
/// negative kept unless `strides` is DLPackStrides::non_negative), byte_offset 0. The buffer
/// stays alive until the deleter runs: when the DLPackPtr is destroyed, or after release() when
/// the receiver calls it, exactly once (at::fromDLPack and every DLPack consumer do). bool is
/// exported as DLPack's kDLBool (code 6, 8 bits).
template <Element T>
DLPackPtr to_dlpack(const Tensor<T>& tensor, DLPackStrides strides = DLPackStrides::as_is) {
  return detail::export_dlpack(AnyTensor(tensor), strides);
}
/// to_dlpack for a tensor whose dtype is known at run time.
inline DLPackPtr to_dlpack(const AnyTensor& tensor, DLPackStrides strides = DLPackStrides::as_is) {
  return detail::export_dlpack(tensor, strides);
}

/// A tensor over the memory of `managed` without a copy, of any shape and strides (0 and
/// negative included). On success the tensor owns `managed`: its deleter runs when the last
/// tensor, view or batch over the memory is gone. On an error nothing is taken and the caller
/// still owns `managed`. TypeError when its dtype is not T (or has lanes != 1); ValueError for
/// a null tensor, a device other than host memory (kDLCPU, kDLCUDAHost, kDLROCMHost), null or
/// misaligned data, or a bool element whose byte is not 0 or 1 (the producer's buffer is not
/// rewritten); ShapeError for negative ndim or sizes, or strides whose span overflows.
template <Element T>
Tensor<T> from_dlpack(DLManagedTensor* managed) {
  std::shared_ptr<detail::DLPackOwner> owner;
  Tensor<T> tensor = detail::import_dlpack_as<T>(managed, "from_dlpack", owner);
  owner->taken = true;
  return tensor;
}
/// from_dlpack taking an owned DLManagedTensor: empty on success; on an error it still holds
/// the tensor (and frees it when destroyed).
template <Element T>
Tensor<T> from_dlpack(DLPackPtr&& managed) {
  Tensor<T> tensor = from_dlpack<T>(managed.get());
  (void)managed.release();  // the tensor owns it now
  return tensor;
}

/// from_dlpack for a dtype known only at run time: any of the twelve (TypeError for others).
inline AnyTensor any_from_dlpack(DLManagedTensor* managed) {
  detail::DLPackImport imported = detail::import_dlpack(managed, "any_from_dlpack");
  imported.owner->taken = true;
  return imported.tensor;
}
/// any_from_dlpack taking an owned DLManagedTensor, as from_dlpack(DLPackPtr&&).
inline AnyTensor any_from_dlpack(DLPackPtr&& managed) {
  AnyTensor tensor = any_from_dlpack(managed.get());
  (void)managed.release();  // the tensor owns it now
  return tensor;
}

/// A batch as DLPack tensors: its data and its metadata (int64), each owned until handed on.
/// first_idx is set for packed batches only.
struct DLPackBatch {
  DLPackPtr data;
  DLPackPtr shape_per_tensor;
  DLPackPtr first_idx;
};

/// The batch's data and metadata as DLPack tensors over the same memory (no copy; `strides` as
/// for a tensor).
template <Batch B>
DLPackBatch to_dlpack(const B& batch, DLPackStrides strides = DLPackStrides::as_is) {
  DLPackBatch out;
  out.data = to_dlpack(batch.data(), strides);
  out.shape_per_tensor = to_dlpack(batch.shape_per_tensor(), strides);
  if constexpr (std::is_same_v<B, PackedBatch<typename B::value_type>>)
    out.first_idx = to_dlpack(batch.first_idx(), strides);
  return out;
}

/// The batch B (ExactBatch<T>, PaddedBatch<T> or PackedBatch<T>) over the memory of `batch`,
/// without a copy; its metadata is checked as the batch's constructor checks it. On success
/// the batch owns the DLPack tensors it uses and `batch` no longer holds them (an ExactBatch
/// uses only data; `batch` keeps and frees the rest); on an error `batch` keeps them all.
/// from_dlpack's errors, ValueError when a tensor the layout needs is missing.
template <Batch B>
B from_dlpack(DLPackBatch&& batch) {
  using T = typename B::value_type;
  constexpr bool packed = std::is_same_v<B, PackedBatch<T>>;
  constexpr bool exact = std::is_same_v<B, ExactBatch<T>>;
  const char* missing = batch.data == nullptr                         ? "data"
                        : !exact && batch.shape_per_tensor == nullptr ? "shape_per_tensor"
                        : packed && batch.first_idx == nullptr        ? "first_idx"
                                                                      : nullptr;
  if (missing != nullptr)
    detail::fail<ValueError>("from_dlpack", {"the batch has no ", missing, " tensor"});
  std::shared_ptr<detail::DLPackOwner> owners[3];
  const auto make = [&] {
    Tensor<T> data = detail::import_dlpack_as<T>(batch.data.get(), "from_dlpack", owners[0]);
    if constexpr (exact) {
      return B(std::move(data));
    } else {
      Tensor<index_t> shapes =
          detail::import_dlpack_as<index_t>(batch.shape_per_tensor.get(), "from_dlpack", owners[1]);
      if constexpr (packed)
        return B(
            std::move(data), std::move(shapes),
            detail::import_dlpack_as<index_t>(batch.first_idx.get(), "from_dlpack", owners[2]));
      else
        return B(std::move(data), std::move(shapes));
    }
  };
  B out = make();
  // Every tensor and the batch are checked: only now are the DLPack tensors taken.
  DLPackPtr* sources[3] = {&batch.data, &batch.shape_per_tensor, &batch.first_idx};
  for (int i = 0; i < 3; ++i) {
    if (owners[i] == nullptr) continue;
    owners[i]->taken = true;
    (void)sources[i]->release();
  }
  return out;
}

}  // namespace tbatch
