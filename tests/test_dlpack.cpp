// DLPack exchange (include/tbatch/dlpack.hpp): export, import of producer-made tensors with any
// strides, ownership (each deleter runs exactly once, never on an error), batches, and errors.

#include <tbatch/dlpack.hpp>

#include "test_support.hpp"

using namespace tbatch;
using namespace tbatch::testing;
using Catch::Matchers::Contains;

namespace {

/// A DLManagedTensor as another library would hand it over: it owns a float buffer and counts
/// how often its deleter runs.
struct Producer {
  std::vector<float> values;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  DLManagedTensor managed{};
  int* deletions;

  static DLManagedTensor* make(int& deletions, std::vector<float> values,
                               std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                               std::size_t first = 0) {
    auto* p = new Producer{std::move(values), std::move(shape), std::move(strides), {}, &deletions};
    DLTensor& t = p->managed.dl_tensor;
    t.data = p->values.data();
    t.byte_offset = first * sizeof(float);
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<std::int32_t>(p->shape.size());
    t.dtype = {kDLFloat, 32, 1};
    t.shape = p->shape.data();
    t.strides = p->strides.empty() ? nullptr : p->strides.data();
    p->managed.manager_ctx = p;
    p->managed.deleter = [](DLManagedTensor* self) {
      auto* owner = static_cast<Producer*>(self->manager_ctx);
      ++*owner->deletions;
      delete owner;
    };
    return &p->managed;
  }
};

std::vector<float> iota_values(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = float(i);
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("to_dlpack / from_dlpack round trip every dtype without a copy", "[dlpack]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  const Tensor<T> x = iota<T>(Shape{3, 4}).transpose(0, 1);
  DLManagedTensor* managed = to_dlpack(x);
  const DLTensor& t = managed->dl_tensor;
  REQUIRE(t.device.device_type == kDLCPU);
  REQUIRE(t.ndim == 2);
  REQUIRE(t.shape[0] == 4);
  REQUIRE(t.shape[1] == 3);
  REQUIRE(t.strides[0] == 1);
  REQUIRE(t.strides[1] == 4);
  REQUIRE(t.byte_offset == 0);
  REQUIRE(t.data == static_cast<const void*>(x.data()));
  REQUIRE(t.dtype.bits == 8 * sizeof(T));
  REQUIRE(t.dtype.lanes == 1);
  if constexpr (std::is_same_v<T, bool>)
    REQUIRE(t.dtype.code == 6);  // kDLBool
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>)
    REQUIRE(t.dtype.code == kDLBfloat);
  else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Eigen::half>)
    REQUIRE(t.dtype.code == kDLFloat);
  else
    REQUIRE(t.dtype.code == (std::is_signed_v<T> ? kDLInt : kDLUInt));

  const long uses_before = x.storage().use_count();
  {
    const Tensor<T> y = from_dlpack<T>(managed);
    REQUIRE(y.data() == x.data());
    REQUIRE(y == x);
    REQUIRE(x.storage().use_count() == uses_before);  // the export holds it, y holds the export
    const AnyTensor any = any_from_dlpack(to_dlpack(y));
    REQUIRE(any.dtype() == dtype_of<T>);
    REQUIRE(any.get<T>() == x);
  }
  // Both imports are gone, so both exports' deleters ran and released the buffer.
  REQUIRE(x.storage().use_count() == uses_before - 1);
}

TEST_CASE("from_dlpack reads any strides and byte_offset, and owns the tensor", "[dlpack]") {
  int deletions = 0;
  struct Case {
    std::vector<std::int64_t> shape, strides;
    std::size_t first;
  };
  for (const Case& c : {Case{{3, 4}, {}, 0}, Case{{3, 4}, {4, 1}, 0}, Case{{4, 3}, {1, 4}, 0},
                        Case{{3, 4}, {-4, -1}, 11}, Case{{3, 4}, {0, 1}, 4},
                        Case{{2, 2, 3}, {0, -3, 1}, 6}, Case{{0, 5}, {}, 0}, Case{{}, {}, 7}}) {
    const std::vector<float> values = iota_values(12);
    deletions = 0;
    {
      Tensor<float> x =
          from_dlpack<float>(Producer::make(deletions, values, c.shape, c.strides, c.first));
      REQUIRE(deletions == 0);
      REQUIRE(x.dim() == index_t(c.shape.size()));
      const Strides strides = c.strides.empty() ? layout::contiguous_strides(x.shape())
                                                : Strides(c.strides.begin(), c.strides.end());
      for_each_index(x.shape(), [&](const std::vector<index_t>& idx) {
        index_t at = index_t(c.first);
        for (std::size_t d = 0; d < idx.size(); ++d)
          at += idx[d] * strides[d];
        REQUIRE(element_at(x, idx) == values[std::size_t(at)]);
      });
      const Tensor<float> view = x.unsqueeze(0);
      x = Tensor<float>();
      REQUIRE(deletions == 0);  // the view keeps the producer's memory alive
    }
    REQUIRE(deletions == 1);
  }
}

TEST_CASE("from_dlpack errors leave the tensor with the caller", "[dlpack][errors]") {
  int deletions = 0;
  const auto rejected = [&](auto&& edit, const std::string& message, auto error_type) {
    DLManagedTensor* managed = Producer::make(deletions, iota_values(6), {2, 3}, {});
    edit(managed->dl_tensor);
    using Error = typename decltype(error_type)::type;
    REQUIRE_THROWS_AS(from_dlpack<float>(managed), Error);
    REQUIRE_THROWS_WITH(from_dlpack<float>(managed), Contains(message));
    REQUIRE(deletions == 0);
    managed->deleter(managed);
    REQUIRE(deletions == 1);
    deletions = 0;
  };
  using V = std::type_identity<ValueError>;
  using S = std::type_identity<ShapeError>;
  using TE = std::type_identity<TypeError>;
  rejected(
      [](DLTensor& t) {
        t.device = {kDLCUDA, 1};
      },
      "from_dlpack: the tensor is on device type 2 (id 1); tbatch reads host memory only", V{});
  rejected([](DLTensor& t) { t.dtype.lanes = 4; }, "has 4 lanes per element", TE{});
  rejected(
      [](DLTensor& t) {
        t.dtype = {kDLComplex, 64, 1};
      },
      "DLPack data type code 5 with 64 bits has no tbatch dtype", TE{});
  rejected([](DLTensor& t) { t.dtype = {kDLFloat, 8, 1}; }, "code 2 with 8 bits", TE{});
  rejected(
      [](DLTensor& t) {
        t.dtype = {kDLInt, 32, 1};
      },
      "from_dlpack: the tensor holds int32, not float32; use any_from_dlpack", TE{});
  rejected([](DLTensor& t) { t.ndim = -1; }, "from_dlpack: ndim is -1; expected >= 0", S{});
  rejected([](DLTensor& t) { t.shape = nullptr; }, "shape is null for ndim 2", V{});
  rejected([](DLTensor& t) { t.shape[1] = -3; }, "shape[1] is -3; sizes must be >= 0", S{});
  rejected([](DLTensor& t) { t.data = nullptr; }, "data is null for shape [2, 3]", V{});
  rejected([](DLTensor& t) { t.byte_offset = 2; }, "is not aligned to 4 bytes, as float32 needs",
           V{});
  REQUIRE_THROWS_WITH(from_dlpack<float>(nullptr), "from_dlpack: the DLManagedTensor is null");
  REQUIRE_THROWS_AS(any_from_dlpack(nullptr), ValueError);
}

TEST_CASE("batches go out as data plus metadata and come back without a copy", "[dlpack]") {
  const std::vector<Tensor<float>> list{iota<float>(Shape{3, 2}), iota<float>(Shape{1, 2})};
  SECTION("padded") {
    const PaddedBatch<float> padded = list_to_padded(list, -1);
    DLPackBatch exported = to_dlpack(padded);
    REQUIRE(exported.first_idx == nullptr);
    REQUIRE(exported.shape_per_tensor->dl_tensor.dtype.code == kDLInt);
    const auto back = from_dlpack<PaddedBatch<float>>(std::move(exported));
    REQUIRE(exported.data == nullptr);
    REQUIRE(back.data().data() == padded.data().data());
    REQUIRE(back.shape_per_tensor() == padded.shape_per_tensor());
  }
  SECTION("packed") {
    const PackedBatch<float> packed = list_to_packed(list);
    const auto back = from_dlpack<PackedBatch<float>>(to_dlpack(packed));
    REQUIRE(back.data().data() == packed.data().data());
    REQUIRE(back.first_idx() == packed.first_idx());
  }
  SECTION("exact") {
    const ExactBatch<float> exact(iota<float>(Shape{2, 3, 2}));
    DLPackBatch exported = to_dlpack(exact);
    const auto back = from_dlpack<ExactBatch<float>>(std::move(exported));
    REQUIRE(back.data().data() == exact.data().data());
    REQUIRE(exported.shape_per_tensor != nullptr);  // unused, still the caller's to free
  }
  SECTION("an error takes nothing") {
    const PackedBatch<float> packed = list_to_packed(list);
    DLPackBatch exported = to_dlpack(packed);
    exported.first_idx->dl_tensor.shape[0] = 2;  // 3 entries for 2 elements
    REQUIRE_THROWS_AS(from_dlpack<PackedBatch<float>>(std::move(exported)), ShapeError);
    REQUIRE((exported.data && exported.shape_per_tensor && exported.first_idx));
    exported.first_idx.reset();
    REQUIRE_THROWS_WITH(from_dlpack<PackedBatch<float>>(std::move(exported)),
                        "from_dlpack: the batch has no first_idx tensor");
    REQUIRE_THROWS_AS(from_dlpack<PackedBatch<double>>(std::move(exported)), ValueError);
  }
}
