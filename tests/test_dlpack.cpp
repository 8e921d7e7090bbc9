// DLPack exchange (include/tbatch/dlpack.hpp): export, import of producer-made tensors with any
// strides, ownership (each deleter runs exactly once, never on an error), batches, and errors.

#include <tbatch/dlpack.hpp>

#include "test_support.hpp"

using namespace tbatch;
using namespace tbatch::testing;
using Catch::Matchers::Contains;

namespace {

/// A DLManagedTensor as another library would hand it over: it owns a buffer of V (float unless
/// said) and counts how often its deleter runs.
template <class V>
struct BasicProducer {
  std::vector<V> values;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  DLManagedTensor managed{};
  int* deletions;

  static DLManagedTensor* make(int& deletions, std::vector<V> values,
                               std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                               std::size_t first = 0, DLDataType dtype = {kDLFloat, 32, 1}) {
    auto* p =
        new BasicProducer{std::move(values), std::move(shape), std::move(strides), {}, &deletions};
    DLTensor& t = p->managed.dl_tensor;
    t.data = p->values.data();
    t.byte_offset = first * sizeof(V);
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<std::int32_t>(p->shape.size());
    t.dtype = dtype;
    t.shape = p->shape.data();
    t.strides = p->strides.empty() ? nullptr : p->strides.data();
    p->managed.manager_ctx = p;
    p->managed.deleter = [](DLManagedTensor* self) {
      auto* owner = static_cast<BasicProducer*>(self->manager_ctx);
      ++*owner->deletions;
      delete owner;
    };
    return &p->managed;
  }
};
using Producer = BasicProducer<float>;

/// DLPack's kDLBool (code 6, one byte per element).
constexpr DLDataType dl_bool{6, 8, 1};

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
  DLPackPtr managed = to_dlpack(x);
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
    const Tensor<T> y = from_dlpack<T>(std::move(managed));
    REQUIRE(managed == nullptr);  // y owns it now
    REQUIRE(y.data() == x.data());
    REQUIRE(equal(y, x));
    REQUIRE(x.storage().use_count() == uses_before);  // the export holds it, y holds the export
    const AnyTensor any = any_from_dlpack(to_dlpack(y));
    REQUIRE(any.dtype() == dtype_of<T>);
    REQUIRE(equal(any.get<T>(), x));
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
  // Strides whose span overflows: highest - lowest + 1 elements do not fit in 64 bits.
  static std::int64_t spanning[2] = {std::numeric_limits<std::int64_t>::max(),
                                     std::numeric_limits<std::int64_t>::min()};
  rejected(
      [](DLTensor& t) {
        t.shape[1] = 2;
        t.strides = spanning;
      },
      "from_dlpack: shape [2, 2] with strides [9223372036854775807, -9223372036854775808] and "
      "offset 0 spans more elements than a 64-bit index holds",
      S{});
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
    REQUIRE(equal(back.shape_per_tensor(), padded.shape_per_tensor()));
  }
  SECTION("packed") {
    const PackedBatch<float> packed = list_to_packed(list);
    const auto back = from_dlpack<PackedBatch<float>>(to_dlpack(packed));
    REQUIRE(back.data().data() == packed.data().data());
    REQUIRE(equal(back.first_idx(), packed.first_idx()));
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

TEST_CASE("from_dlpack rejects bool bytes other than 0 and 1, naming the first in row-major order",
          "[dlpack][errors]") {
  int deletions = 0;
  struct Case {
    std::vector<std::uint8_t> bytes;
    std::vector<std::int64_t> shape, strides;
    std::size_t first;
    std::string message;
  };
  // The transposed case walks memory in the order 0, 2, 4, 1, 3, 5 of its flat positions: the
  // byte at flat position 2 is met first, but position 1 comes first in row-major order.
  for (const Case& c :
       {Case{{0, 1, 1, 0, 2, 1}, {2, 3}, {}, 0, "flat position 4 is byte 2"},
        Case{{0, 3, 0, 2, 1, 1}, {3, 2}, {1, 3}, 0, "flat position 1 is byte 2"},
        Case{{255, 0, 0, 7, 1, 0}, {2, 3}, {-3, -1}, 5, "flat position 2 is byte 7"},
        Case{{1, 128}, {3, 2}, {0, 1}, 0, "flat position 1 is byte 128"}}) {
    deletions = 0;
    DLManagedTensor* managed =
        BasicProducer<std::uint8_t>::make(deletions, c.bytes, c.shape, c.strides, c.first, dl_bool);
    REQUIRE_THROWS_MATCHES(from_dlpack<bool>(managed), ValueError,
                           Catch::Matchers::Message("from_dlpack: the bool element at " +
                                                    c.message + "; bool elements must be 0 or 1"));
    TBATCH_CHECK_THROWS_WITH(any_from_dlpack(managed), ValueError,
                             "any_from_dlpack: the bool element at " + c.message);
    REQUIRE(deletions == 0);  // rejected, so still the caller's
    managed->deleter(managed);
    REQUIRE(deletions == 1);
  }
  // 0 and 1 only: accepted, any strides.
  const Tensor<bool> ok = from_dlpack<bool>(BasicProducer<std::uint8_t>::make(
      deletions, {0, 1, 1, 0, 0, 1}, {2, 3}, {-3, -1}, 5, dl_bool));
  REQUIRE(equal(ok, Tensor<bool>({2, 3}, {true, false, false, true, true, false})));
}

TEST_CASE("from_dlpack's bool check matches a plain loop on random strided bytes", "[dlpack]") {
  std::mt19937 rng(29);
  for (int trial = 0; trial < 200; ++trial) {
    Tensor<std::uint8_t> bytes(random_shape(rng, index_t(rng() % 4), 1, 5));
    for (index_t i = 0; i < bytes.numel(); ++i)
      bytes.data()[i] = rng() % 8 == 0 ? std::uint8_t(2 + rng() % 254) : std::uint8_t(rng() % 2);
    Tensor<std::uint8_t> view = bytes;
    for (index_t d = 0; d < view.dim(); ++d)
      if (rng() % 2 == 0) view = view.slice(d, std::nullopt, std::nullopt, -1);
    if (view.dim() >= 2 && rng() % 2 == 0) view = view.transpose(0, view.dim() - 1);
    // The first byte other than 0 and 1 in row-major order, by a plain loop.
    index_t flat = 0, expected = -1;
    int expected_byte = 0;
    for_each_index(view.shape(), [&](const std::vector<index_t>& idx) {
      const int byte = element_at(view, idx);
      if (expected < 0 && byte > 1) {
        expected = flat;
        expected_byte = byte;
      }
      ++flat;
    });
    DLPackPtr managed = to_dlpack(view);
    managed->dl_tensor.dtype = dl_bool;
    if (expected < 0) {
      REQUIRE(equal(any_from_dlpack(std::move(managed)).get<bool>(), view.cast<bool>()));
    } else {
      REQUIRE_THROWS_MATCHES(
          any_from_dlpack(std::move(managed)), ValueError,
          Catch::Matchers::Message(
              "any_from_dlpack: the bool element at flat position " + std::to_string(expected) +
              " is byte " + std::to_string(expected_byte) + "; bool elements must be 0 or 1"));
      REQUIRE(managed != nullptr);  // rejected: still ours, freed at the end of the scope
    }
  }
}

TEST_CASE("to_dlpack returns an owner: an export nobody takes is freed", "[dlpack]") {
  const Tensor<float> x = iota<float>(Shape{2, 3});
  const long uses = x.storage().use_count();
  {
    DLPackPtr unused = to_dlpack(x);
    REQUIRE(x.storage().use_count() == uses + 1);
  }
  REQUIRE(x.storage().use_count() == uses);  // the DLPackPtr ran the deleter
  // A receiver that throws: the export is still the DLPackPtr's, freed when it goes.
  REQUIRE_THROWS_AS(from_dlpack<double>(to_dlpack(x)), TypeError);
  REQUIRE(x.storage().use_count() == uses);
  DLPackPtr kept = to_dlpack(x);
  REQUIRE_THROWS_AS(from_dlpack<int>(std::move(kept)), TypeError);
  REQUIRE(kept != nullptr);
  // release() hands the raw pointer on, as to a C consumer, which then owns it.
  DLManagedTensor* raw = kept.release();
  const Tensor<float> y = from_dlpack<float>(raw);
  REQUIRE(y.data() == x.data());
  const AnyTensor any = any_from_dlpack(to_dlpack(AnyTensor(x)));
  REQUIRE(equal(any.get<float>(), x));
}

TEST_CASE("DLPackStrides::non_negative exports no negative stride", "[dlpack]") {
  std::mt19937 rng(11);
  const auto check = [](const Tensor<float>& x, bool copied) {
    DLPackPtr exported = to_dlpack(x, DLPackStrides::non_negative);
    const DLTensor& t = exported->dl_tensor;
    REQUIRE(t.ndim == x.dim());
    for (index_t d = 0; d < x.dim(); ++d) {
      REQUIRE(t.shape[d] == x.shape()[d]);
      REQUIRE(t.strides[d] >= 0);
    }
    REQUIRE((t.data == static_cast<const void*>(x.data())) == !copied);
    const Tensor<float> back = from_dlpack<float>(std::move(exported));
    REQUIRE(equal(back, x));  // the same values, in the same places
  };
  for (int trial = 0; trial < 50; ++trial) {
    const Tensor<float> x = random_tensor<float>(random_shape(rng, 1 + rng() % 3, 1, 5), rng);
    Tensor<float> view = x;
    bool flipped = false;
    for (index_t d = 0; d < view.dim(); ++d) {
      if (rng() % 2 != 0) continue;
      view = view.slice(d, std::nullopt, std::nullopt, -1);
      flipped = flipped || view.shape()[d] > 1;
    }
    if (view.dim() >= 2 && rng() % 2 == 0) view = view.transpose(0, 1);
    check(view, flipped);
  }
  // Non-negative strides already (transposed, stride-0, sliced): the same memory, no copy.
  const Tensor<float> x = iota<float>(Shape{4, 6});
  check(x.transpose(0, 1), false);
  check(x.slice(1, 1, 5, 2), false);
  check(x.select(0, 1).unsqueeze(0).expand({3, 6}), false);
  // Negative strides that address nothing are exported as 1, without a copy.
  const Tensor<float> one_row = x.slice(0, 2, 1, -1);  // shape {1, 6}, stride -6
  REQUIRE(one_row.strides()[0] < 0);
  check(one_row, false);
  const Tensor<float> none = x.slice(0, 0, 0, -1);  // no elements
  check(none, false);
  // The default keeps the strides, negative ones included.
  const Tensor<float> flipped = x.slice(1, std::nullopt, std::nullopt, -1);
  DLPackPtr as_is = to_dlpack(flipped);
  REQUIRE(as_is->dl_tensor.strides[1] == -1);
  REQUIRE(as_is->dl_tensor.data == static_cast<const void*>(flipped.data()));
  // Batches take the option for each of their tensors.
  const ExactBatch<float> batch(flipped.unsqueeze(0));
  DLPackBatch out = to_dlpack(batch, DLPackStrides::non_negative);
  REQUIRE(out.data->dl_tensor.strides[2] == 1);
  REQUIRE(equal(from_dlpack<ExactBatch<float>>(std::move(out)).data(), batch.data()));
}
