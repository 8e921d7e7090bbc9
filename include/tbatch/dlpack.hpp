#pragma once
// DLPack exchange: tensors and batches handed to and taken from any library that speaks DLPack
// (libtorch, TensorFlow, JAX, CuPy, NumPy, TVM, ...) without copying their elements. Optional:
// needs <dlpack/dlpack.h> (Debian's libdlpack-dev) and the CMake target tbatch::tbatch_dlpack.
// docs/interop.md.

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tbatch/tbatch.hpp"

namespace tbatch {

namespace detail {

// kDLBool entered DLPack in 0.8; Debian 12 ships 0.6, whose header lacks the name.
inline constexpr std::uint8_t dlpack_bool_code = 6;

inline DLDataType dlpack_dtype(DType dtype) {
  const auto bits = static_cast<std::uint8_t>(8 * dtype_size(dtype, "to_dlpack"));
  switch (dtype) {
    case DType::float32:
    case DType::float64:
    case DType::float16:
      return {kDLFloat, bits, 1};
    case DType::bfloat16:
      return {kDLBfloat, bits, 1};
    case DType::int8:
    case DType::int16:
    case DType::int32:
    case DType::int64:
      return {kDLInt, bits, 1};
    case DType::uint8:
    case DType::uint16:
    case DType::uint32:
      return {kDLUInt, bits, 1};
    case DType::boolean:
      return {dlpack_bool_code, bits, 1};
  }
  fail<ValueError>("to_dlpack", "dtype tag ", static_cast<int>(dtype), " is not a tbatch dtype");
}

/// The tbatch dtype of a DLPack data type; TypeError naming `function` for one tbatch lacks.
inline DType dtype_from_dlpack(DLDataType type, const char* function) {
  if (type.lanes != 1)
    fail<TypeError>(function, "the tensor has ", type.lanes,
                    " lanes per element; tbatch reads only lanes == 1");
  for (const DType dtype :
       {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int8, DType::int16,
        DType::int32, DType::int64, DType::uint8, DType::uint16, DType::uint32, DType::boolean}) {
    const DLDataType candidate = dlpack_dtype(dtype);
    if (candidate.code == type.code && candidate.bits == type.bits) return dtype;
  }
  fail<TypeError>(function, "DLPack data type code ", int(type.code), " with ", int(type.bits),
                  " bits has no tbatch dtype (expected int 8-64, uint 8-32, float 16-64, "
                  "bfloat 16 or bool 8 bits)");
}

/// What an exported DLManagedTensor points into: the buffer it keeps alive and the arrays its
/// DLTensor refers to.
struct DLPackExport {
  DLManagedTensor managed{};
  std::shared_ptr<Storage> storage;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
};

inline DLManagedTensor* export_dlpack(const std::shared_ptr<Storage>& storage, const Layout& l,
                                      DType dtype) {
  auto exported = std::make_unique<DLPackExport>();
  exported->storage = storage;
  exported->shape.assign(l.shape.begin(), l.shape.end());
  exported->strides.assign(l.strides.begin(), l.strides.end());
  DLTensor& t = exported->managed.dl_tensor;
  // The element pointer itself, byte_offset 0: some consumers (torch 1.x) ignore byte_offset.
  t.data = static_cast<char*>(storage->data()) + l.offset * dtype_size(dtype);
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
  return &exported.release()->managed;
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

/// Checks everything `managed` describes and views its memory, not yet taking it.
inline DLPackImport import_dlpack(DLManagedTensor* managed, const char* function) {
  if (managed == nullptr) fail<ValueError>(function, "the DLManagedTensor is null");
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost &&
      t.device.device_type != kDLROCMHost)
    fail<ValueError>(function, "the tensor is on device type ", int(t.device.device_type), " (id ",
                     t.device.device_id,
                     "); tbatch reads host memory only (kDLCPU, kDLCUDAHost, kDLROCMHost)");
  const DType dtype = dtype_from_dlpack(t.dtype, function);
  if (t.ndim < 0) fail<ShapeError>(function, "ndim is ", t.ndim, "; expected >= 0");
  if (t.ndim > 0 && t.shape == nullptr)
    fail<ValueError>(function, "shape is null for ndim ", t.ndim);
  Layout l;
  for (std::int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0)
      fail<ShapeError>(function, "shape[", d, "] is ", t.shape[d], "; sizes must be >= 0");
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
  return {AnyTensor::from_storage(std::move(storage), std::move(l), dtype, function), owner};
}

/// import_dlpack with dtype T (TypeError otherwise).
template <class T>
Tensor<T> import_dlpack_as(DLManagedTensor* managed, const char* function,
                           std::shared_ptr<DLPackOwner>& owner) {
  DLPackImport imported = import_dlpack(managed, function);
  if (imported.tensor.dtype() != dtype_of<T>)
    fail<TypeError>(function, "the tensor holds ", imported.tensor.dtype(), ", not ",
                    dtype_name_of<T>, "; use any_from_dlpack for a dtype known at run time");
  owner = std::move(imported.owner);
  return imported.tensor.get<T>(function);
}

/// Calls the deleter of the DLManagedTensor it holds (the producer's cleanup).
struct DLPackDeleter {
  void operator()(DLManagedTensor* managed) const {
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
};

}  // namespace detail

/// A DLManagedTensor owned until it is handed on (release()) or destroyed (its deleter runs).
using DLPackPtr = std::unique_ptr<DLManagedTensor, detail::DLPackDeleter>;

/// The tensor as a DLManagedTensor over the same memory (no copy): CPU device, the tensor's
/// shape and strides (in elements; 0 and negative kept), byte_offset 0. The buffer stays alive
/// until the receiver calls the deleter, which it must do exactly once (at::fromDLPack and
/// every DLPack consumer do). bool is exported as DLPack's kDLBool (code 6, 8 bits).
template <Element T>
DLManagedTensor* to_dlpack(const Tensor<T>& tensor) {
  return detail::export_dlpack(tensor.storage(), tensor.layout(), dtype_of<T>);
}
/// to_dlpack for a tensor whose dtype is known at run time.
inline DLManagedTensor* to_dlpack(const AnyTensor& tensor) {
  return detail::export_dlpack(tensor.storage(), tensor.layout(), tensor.dtype());
}

/// A tensor over the memory of `managed` without a copy, of any shape and strides (0 and
/// negative included). On success the tensor owns `managed`: its deleter runs when the last
/// tensor, view or batch over the memory is gone. On an error nothing is taken and the caller
/// still owns `managed`. TypeError when its dtype is not T (or has lanes != 1); ValueError for
/// a null tensor, a device other than host memory (kDLCPU, kDLCUDAHost, kDLROCMHost), null or
/// misaligned data; ShapeError for negative ndim or sizes, or strides that overflow.
template <Element T>
Tensor<T> from_dlpack(DLManagedTensor* managed) {
  std::shared_ptr<detail::DLPackOwner> owner;
  Tensor<T> tensor = detail::import_dlpack_as<T>(managed, "from_dlpack", owner);
  owner->taken = true;
  return tensor;
}

/// from_dlpack for a dtype known only at run time: any of the twelve (TypeError for others).
inline AnyTensor any_from_dlpack(DLManagedTensor* managed) {
  detail::DLPackImport imported = detail::import_dlpack(managed, "any_from_dlpack");
  imported.owner->taken = true;
  return imported.tensor;
}

/// A batch as DLPack tensors: its data and its metadata (int64), each owned until handed on.
/// first_idx is set for packed batches only.
struct DLPackBatch {
  DLPackPtr data;
  DLPackPtr shape_per_tensor;
  DLPackPtr first_idx;
};

/// The batch's data and metadata as DLPack tensors over the same memory (no copy).
template <Batch B>
DLPackBatch to_dlpack(const B& batch) {
  DLPackBatch out;
  out.data.reset(to_dlpack(batch.data()));
  out.shape_per_tensor.reset(to_dlpack(batch.shape_per_tensor()));
  if constexpr (std::is_same_v<B, PackedBatch<typename B::value_type>>)
    out.first_idx.reset(to_dlpack(batch.first_idx()));
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
    detail::fail<ValueError>("from_dlpack", "the batch has no ", missing, " tensor");
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
