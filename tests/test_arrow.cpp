// The Arrow C Data Interface (include/tbatch/interop/arrow.hpp): the exported structs byte by
// byte as the specification lays them out, read back by an independent reader written from the
// specification; round trips for every dtype; imports of arrays built by hand as another
// producer would (offsets, list views, nulls, bitmaps, unaligned buffers, the tensor
// extensions); release-callback counting; and every malformed input as an error.

#include <tbatch/interop/arrow.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "test_support.hpp"

using namespace tbatch;
using namespace tbatch::testing;

namespace {

// ---------------------------------------------------------------------------------------------
// An Arrow reader written from the specification alone (format strings, buffer layouts, the
// metadata encoding); it shares nothing with tbatch's import.
namespace spec {

struct Value {
  bool null = false;
  bool nested = false;  // a list, fixed_size_list or struct (items), else a number
  double number = 0;
  std::vector<Value> items;
};

float half_to_float(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1F, fraction = h & 0x3FF;
  const double magnitude = exponent == 0    ? std::ldexp(fraction, -24)
                           : exponent == 31 ? (fraction ? NAN : INFINITY)
                                            : std::ldexp(1024 + fraction, exponent - 25);
  return float(sign ? -magnitude : magnitude);
}

template <class V>
V load(const void* buffer, std::int64_t i) {
  V v;
  std::memcpy(&v, static_cast<const char*>(buffer) + i * std::int64_t(sizeof(V)), sizeof(V));
  return v;
}

double primitive(std::string_view f, const void* data, std::int64_t i) {
  if (f == "b") return (static_cast<const std::uint8_t*>(data)[i / 8] >> (i % 8)) & 1;
  if (f == "c") return load<std::int8_t>(data, i);
  if (f == "C") return load<std::uint8_t>(data, i);
  if (f == "s") return load<std::int16_t>(data, i);
  if (f == "S") return load<std::uint16_t>(data, i);
  if (f == "i") return load<std::int32_t>(data, i);
  if (f == "I") return load<std::uint32_t>(data, i);
  if (f == "l") return double(load<std::int64_t>(data, i));
  if (f == "e") return half_to_float(load<std::uint16_t>(data, i));
  if (f == "f") return load<float>(data, i);
  if (f == "g") return load<double>(data, i);
  FAIL("the reader has no primitive format " << f);
  return 0;
}

/// Item i (logical) of array `a` of schema `s`.
Value read(const ArrowSchema* s, const ArrowArray* a, std::int64_t i) {
  const std::int64_t at = a->offset + i;
  Value v;
  if (a->n_buffers > 0 && a->buffers[0] != nullptr &&
      ((static_cast<const std::uint8_t*>(a->buffers[0])[at / 8] >> (at % 8)) & 1) == 0) {
    v.null = true;
    return v;
  }
  const std::string_view f = s->format;
  v.nested = f[0] == '+';
  if (!v.nested) {
    v.number = primitive(f, a->buffers[1], at);
  } else if (f == "+l" || f == "+L") {
    const bool large = f == "+L";
    const std::int64_t start =
        large ? load<std::int64_t>(a->buffers[1], at) : load<std::int32_t>(a->buffers[1], at);
    const std::int64_t end = large ? load<std::int64_t>(a->buffers[1], at + 1)
                                   : load<std::int32_t>(a->buffers[1], at + 1);
    for (std::int64_t j = start; j < end; ++j)
      v.items.push_back(read(s->children[0], a->children[0], j));
  } else if (f == "+vl" || f == "+vL") {
    const bool large = f == "+vL";
    const std::int64_t start =
        large ? load<std::int64_t>(a->buffers[1], at) : load<std::int32_t>(a->buffers[1], at);
    const std::int64_t size =
        large ? load<std::int64_t>(a->buffers[2], at) : load<std::int32_t>(a->buffers[2], at);
    for (std::int64_t j = start; j < start + size; ++j)
      v.items.push_back(read(s->children[0], a->children[0], j));
  } else if (f.starts_with("+w:")) {
    const std::int64_t n = std::stoll(std::string(f.substr(3)));
    for (std::int64_t k = 0; k < n; ++k)
      v.items.push_back(read(s->children[0], a->children[0], at * n + k));
  } else if (f == "+s") {
    for (std::int64_t c = 0; c < a->n_children; ++c)
      v.items.push_back(read(s->children[c], a->children[c], at));
  } else {
    FAIL("the reader has no format " << f);
  }
  return v;
}

/// The metadata entries, decoded as the specification lays them out.
std::vector<std::pair<std::string, std::string>> metadata(const char* m) {
  std::vector<std::pair<std::string, std::string>> out;
  if (m == nullptr) return out;
  const auto next = [&] {
    std::int32_t n;
    std::memcpy(&n, m, 4);
    m += 4;
    std::string text(m, std::size_t(n));
    m += n;
    return text;
  };
  std::int32_t count;
  std::memcpy(&count, m, 4);
  m += 4;
  for (std::int32_t i = 0; i < count; ++i) {
    std::string key = next();
    out.emplace_back(std::move(key), next());
  }
  return out;
}

/// All numbers of a value, depth first.
void flatten(const Value& v, std::vector<double>& out) {
  if (!v.nested && !v.null) out.push_back(v.number);
  for (const Value& item : v.items)
    flatten(item, out);
}

}  // namespace spec

/// The consumer's side of an export: releases what is still live at the end of the scope.
struct Exported {
  ArrowArray array{};
  ArrowSchema schema{};
  Exported() = default;
  Exported(const Exported&) = delete;
  Exported& operator=(const Exported&) = delete;
  ~Exported() {
    if (array.release != nullptr) array.release(&array);
    if (schema.release != nullptr) schema.release(&schema);
  }
};

template <class T>
std::vector<double> numbers_of(const Tensor<T>& t) {
  std::vector<double> out;
  const Tensor<T> c = t.contiguous();
  for (index_t i = 0; i < c.numel(); ++i)
    out.push_back(double(static_cast<float>(c.data()[i])));
  return out;
}

template <class T>
PackedBatch<T> batch_of(const std::vector<Shape>& shapes, int start = 0) {
  std::vector<Tensor<T>> list;
  for (const Shape& s : shapes) {
    Tensor<T> t = iota<T>(s, 50);
    for (index_t i = 0; i < t.numel(); ++i)
      t.data()[i] = value_of<T>(int((i + start) % 50));
    list.push_back(t);
    start += 7;
  }
  return list_to_packed(list);
}

template <class T>
void check_same_batch(const PackedBatch<T>& got, const PackedBatch<T>& expected) {
  REQUIRE(got.batch_size() == expected.batch_size());
  CHECK(equal(got.shape_per_tensor(), expected.shape_per_tensor()));
  CHECK(equal(got.first_idx(), expected.first_idx()));
  CHECK(got.data().shape() == expected.data().shape());
  CHECK(numbers_of(got.data()) == numbers_of(expected.data()));
}

// ---------------------------------------------------------------------------------------------
// Arrays built by hand, as another producer would hand them over.

/// One buffer of a hand-built array: its bytes (none: a null pointer), shifted by `misalign`
/// bytes from an 8-byte boundary.
struct Bytes {
  std::optional<std::vector<std::uint8_t>> bytes;
  std::size_t misalign = 0;
};

template <class V>
Bytes bytes_of(const std::vector<V>& values, std::size_t misalign = 0) {
  std::vector<std::uint8_t> b(values.size() * sizeof(V));
  if (!b.empty()) std::memcpy(b.data(), values.data(), b.size());
  return {std::move(b), misalign};
}

Bytes bits_of(const std::vector<int>& bits) {
  std::vector<std::uint8_t> b((bits.size() + 7) / 8, 0);
  for (std::size_t i = 0; i < bits.size(); ++i)
    b[i / 8] |= std::uint8_t((bits[i] ? 1 : 0) << (i % 8));
  return {std::move(b), 0};
}

const Bytes none{};

struct Node {
  std::int64_t length = 0;
  std::vector<Bytes> buffers;
  std::vector<Node> children;
  std::int64_t offset = 0;
  std::int64_t null_count = 0;
};

/// A hand-built ArrowArray tree; the base's release counts its calls in `*releases`.
struct HandArray {
  std::vector<std::vector<std::uint64_t>> storage;
  std::vector<const void*> buffers;
  std::vector<std::unique_ptr<HandArray>> children;
  std::vector<ArrowArray*> child_pointers;
  int* releases = nullptr;

  static void build(HandArray& h, ArrowArray& out, const Node& node) {
    for (const Bytes& b : node.buffers) {
      if (!b.bytes) {
        h.buffers.push_back(nullptr);
        continue;
      }
      auto& words = h.storage.emplace_back((b.bytes->size() + b.misalign + 7) / 8 + 1, 0);
      char* at = reinterpret_cast<char*>(words.data()) + b.misalign;
      if (!b.bytes->empty()) std::memcpy(at, b.bytes->data(), b.bytes->size());
      h.buffers.push_back(at);
    }
    for (const Node& child : node.children) {
      auto& c = h.children.emplace_back(std::make_unique<HandArray>());
      auto* child_array = new ArrowArray{};
      build(*c, *child_array, child);
      h.child_pointers.push_back(child_array);
    }
    out = ArrowArray{node.length,
                     node.null_count,
                     node.offset,
                     std::int64_t(h.buffers.size()),
                     std::int64_t(h.child_pointers.size()),
                     h.buffers.empty() ? nullptr : h.buffers.data(),
                     h.child_pointers.empty() ? nullptr : h.child_pointers.data(),
                     nullptr,
                     &release,
                     &h};
  }
  static void release(ArrowArray* a) {
    auto* h = static_cast<HandArray*>(a->private_data);
    for (ArrowArray* child : h->child_pointers) {
      if (child->release != nullptr) child->release(child);
      delete child;
    }
    h->child_pointers.clear();
    if (h->releases != nullptr) {
      ++*h->releases;
      delete h;
    }
    a->release = nullptr;
  }
};

/// The base ArrowArray of `node`; its release adds one to `releases`.
ArrowArray hand_array(const Node& node, int& releases) {
  auto* h = new HandArray;
  h->releases = &releases;
  ArrowArray out;
  HandArray::build(*h, out, node);
  return out;
}

/// A hand-built schema tree, owned by the test (released at the end of its scope).
struct HandSchema {
  std::string format, name, metadata;
  std::vector<std::shared_ptr<HandSchema>> children;  // copies share them
  std::vector<ArrowSchema*> pointers;
  ArrowSchema schema{};

  HandSchema(std::string f, std::vector<HandSchema> kids = {}, std::string n = "item",
             std::string m = "")
      : format(std::move(f)), name(std::move(n)), metadata(std::move(m)) {
    for (HandSchema& k : kids)
      children.push_back(std::make_shared<HandSchema>(std::move(k)));
  }
  /// The ArrowSchema, valid while this object lives.
  const ArrowSchema* get() {
    pointers.clear();
    for (auto& c : children)
      pointers.push_back(const_cast<ArrowSchema*>(c->get()));
    schema = ArrowSchema{format.c_str(),
                         name.c_str(),
                         metadata.empty() ? nullptr : metadata.data(),
                         0,
                         std::int64_t(pointers.size()),
                         pointers.empty() ? nullptr : pointers.data(),
                         nullptr,
                         [](ArrowSchema* s) { s->release = nullptr; },
                         nullptr};
    return &schema;
  }
};

std::string encode(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out;
  const auto put = [&](std::size_t n) {
    const auto v = std::int32_t(n);
    out.append(reinterpret_cast<const char*>(&v), 4);
  };
  put(entries.size());
  for (const auto& [k, v] : entries) {
    put(k.size());
    out += k;
    put(v.size());
    out += v;
  }
  return out;
}

std::string extension(const std::string& name, const std::string& json) {
  return encode({{"ARROW:extension:name", name}, {"ARROW:extension:metadata", json}});
}

}  // namespace

TEST_CASE("arrow::export_batch lays the structs out as the specification says", "[arrow]") {
  SECTION("(L_i, 1) elements: large_list<float>, offsets and values shared") {
    const PackedBatch<float> batch = batch_of<float>({{3, 1}, {0, 1}, {2, 1}});
    Exported e;
    arrow::export_batch(batch, &e.array, &e.schema);
    CHECK(std::string(e.schema.format) == "+L");
    CHECK(e.schema.metadata == nullptr);
    CHECK(e.schema.flags == 0);
    REQUIRE(e.schema.n_children == 1);
    CHECK(std::string(e.schema.children[0]->format) == "f");
    CHECK(std::string(e.schema.children[0]->name) == "item");
    CHECK(e.array.length == 3);
    CHECK(e.array.null_count == 0);
    CHECK(e.array.offset == 0);
    REQUIRE(e.array.n_buffers == 2);
    CHECK(e.array.buffers[0] == nullptr);  // no validity bitmap: no nulls
    CHECK(e.array.buffers[1] == batch.first_idx().data());
    const ArrowArray* values = e.array.children[0];
    CHECK(values->length == 5);
    CHECK(values->n_buffers == 2);
    CHECK(values->n_children == 0);
    CHECK(values->buffers[1] == batch.data().data());
    CHECK(spec::read(&e.schema, &e.array, 1).items.empty());
  }
  SECTION("(L_i, D): large_list<fixed_size_list<int16, 3>>") {
    const PackedBatch<std::int16_t> batch = batch_of<std::int16_t>({{2, 3}, {1, 3}});
    Exported e;
    arrow::export_batch(batch, &e.array, &e.schema);
    CHECK(std::string(e.schema.format) == "+L");
    const ArrowSchema* fsl = e.schema.children[0];
    CHECK(std::string(fsl->format) == "+w:3");
    CHECK(std::string(fsl->children[0]->format) == "s");
    const ArrowArray* rows = e.array.children[0];
    CHECK(rows->length == 3);
    CHECK(rows->n_buffers == 1);
    CHECK(rows->buffers[0] == nullptr);
    CHECK(rows->children[0]->length == 9);
    CHECK(rows->children[0]->buffers[1] == batch.data().data());
    const spec::Value row0 = spec::read(&e.schema, &e.array, 0);
    REQUIRE(row0.items.size() == 2);
    CHECK(row0.items[1].items.size() == 3);
  }
  SECTION("rank 3: the variable_shape_tensor extension with its uniform dims") {
    const PackedBatch<double> batch = batch_of<double>({{2, 4, 2}, {3, 4, 2}, {0, 4, 2}});
    Exported e;
    arrow::export_batch(batch, &e.array, &e.schema);
    CHECK(std::string(e.schema.format) == "+s");
    const auto meta = spec::metadata(e.schema.metadata);
    REQUIRE(meta.size() == 2);
    CHECK(meta[0] == std::pair<std::string, std::string>("ARROW:extension:name",
                                                         "arrow.variable_shape_tensor"));
    CHECK(meta[1] == std::pair<std::string, std::string>("ARROW:extension:metadata",
                                                         "{\"uniform_shape\":[null,4,2]}"));
    REQUIRE(e.schema.n_children == 2);
    CHECK(std::string(e.schema.children[0]->name) == "data");
    CHECK(std::string(e.schema.children[0]->format) == "+l");  // the extension's List
    CHECK(std::string(e.schema.children[1]->name) == "shape");
    CHECK(std::string(e.schema.children[1]->format) == "+w:3");
    CHECK(std::string(e.schema.children[1]->children[0]->format) == "i");
    CHECK(e.array.n_buffers == 1);
    const ArrowArray* data = e.array.children[0];
    std::int32_t offsets[4];
    std::memcpy(offsets, data->buffers[1], sizeof offsets);
    CHECK(offsets[0] == 0);
    CHECK(offsets[1] == 16);
    CHECK(offsets[2] == 40);
    CHECK(offsets[3] == 40);
    CHECK(data->children[0]->buffers[1] == batch.data().data());
    const spec::Value row1 = spec::read(&e.schema, &e.array, 1);
    REQUIRE(row1.items.size() == 2);
    CHECK(row1.items[0].items.size() == 24);
    REQUIRE(row1.items[1].items.size() == 3);
    CHECK(row1.items[1].items[0].number == 3);
    CHECK(row1.items[1].items[1].number == 4);
    CHECK(row1.items[1].items[2].number == 2);
    std::vector<double> values;
    spec::flatten(row1.items[0], values);
    CHECK(values == numbers_of(batch.element(1)));
  }
  SECTION("rank 1 elements and the offset options") {
    const PackedBatch<float> rows = batch_of<float>({{3}, {3}});
    Exported e;
    arrow::export_batch(rows, &e.array, &e.schema, {arrow::ListOffsets::int64});
    CHECK(std::string(e.schema.format) == "+s");
    CHECK(std::string(e.schema.children[0]->format) == "+L");
    CHECK(spec::metadata(e.schema.metadata)[1].second == "{\"uniform_shape\":[3]}");
    const PackedBatch<float> batch = batch_of<float>({{3, 1}, {2, 1}});
    Exported small;
    arrow::export_batch(batch, &small.array, &small.schema, {arrow::ListOffsets::int32});
    CHECK(std::string(small.schema.format) == "+l");
    std::int32_t offsets[3];
    std::memcpy(offsets, small.array.buffers[1], sizeof offsets);
    CHECK(offsets[2] == 5);
  }
  SECTION("releasing the base releases every child; a moved-out child outlives it") {
    const PackedBatch<float> batch = batch_of<float>({{2, 3}, {1, 3}});
    Exported e;
    arrow::export_batch(batch, &e.array, &e.schema);
    ArrowArray moved = *e.array.children[0];  // the specification's move of a child
    e.array.children[0]->release = nullptr;
    e.array.release(&e.array);
    CHECK(e.array.release == nullptr);
    std::vector<double> values;
    spec::flatten(spec::read(e.schema.children[0], &moved, 2), values);
    CHECK(values == numbers_of(batch.element(1)));
    moved.release(&moved);
    CHECK(moved.release == nullptr);
  }
}

TEST_CASE("arrow::export_batch: the values outlive every tbatch handle", "[arrow]") {
  Exported e;
  std::vector<double> expected;
  {
    const PackedBatch<float> batch = batch_of<float>({{4, 2}, {1, 2}, {3, 2}});
    expected = numbers_of(batch.data());
    arrow::export_batch(batch, &e.array, &e.schema);
  }  // every tbatch handle is gone: the export keeps the buffers
  std::vector<double> read;
  for (std::int64_t i = 0; i < e.array.length; ++i)
    spec::flatten(spec::read(&e.schema, &e.array, i), read);
  CHECK(read == expected);
}

TEMPLATE_TEST_CASE("arrow round trips every dtype Arrow has", "[arrow]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  const std::vector<std::vector<Shape>> forms = {
      {{3, 1}, {0, 1}, {5, 1}}, {{2, 3}, {4, 3}}, {{2, 3, 2}, {1, 1, 2}, {0, 2, 2}}, {{4}, {4}}};
  for (const auto& shapes : forms) {
    const PackedBatch<T> batch = batch_of<T>(shapes);
    Exported e;
    if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
      TBATCH_CHECK_THROWS_WITH(arrow::export_batch(batch, &e.array, &e.schema), TypeError,
                               "arrow::export_batch: dtype bfloat16 has no Arrow type");
      CHECK(e.array.release == nullptr);  // nothing was exported
    } else {
      arrow::export_batch(batch, &e.array, &e.schema);
      CHECK(arrow::value_dtype(&e.schema) == dtype_of<T>);
      std::vector<double> read;  // the independent reader sees the same values
      const bool tensors = std::string(e.schema.format) == "+s";  // (data, shape) per row
      for (std::int64_t i = 0; i < e.array.length; ++i) {
        const spec::Value row = spec::read(&e.schema, &e.array, i);
        spec::flatten(tensors ? row.items[0] : row, read);
      }
      CHECK(read == numbers_of(batch.data()));
      const PackedBatch<T> back = arrow::import_batch<T>(&e.array, &e.schema);
      CHECK(e.array.release == nullptr);  // taken
      check_same_batch(back, batch);
      if constexpr (!std::is_same_v<T, bool>) CHECK(back.data().data() == batch.data().data());
    }
  }
  if constexpr (!std::is_same_v<T, Eigen::bfloat16>) {
    const Tensor<T> dense = iota<T>({3, 2, 4}, 50);
    for (auto format :
         {arrow::TensorFormat::fixed_shape_tensor, arrow::TensorFormat::fixed_size_list}) {
      Exported e;
      arrow::export_tensor(dense, &e.array, &e.schema, format);
      const AnyTensor back = arrow::import_any_tensor(&e.array, &e.schema);
      CHECK(back.dtype() == dtype_of<T>);
      CHECK(equal(back.get<T>(), dense));
    }
  }
}

TEST_CASE("arrow::import_batch reads arrays built by another producer", "[arrow]") {
  int releases = 0;
  SECTION("list<float> with array and child offsets: a view of the producer's values") {
    // Rows 1..3 of a 5-row list; the child starts at its entry 2.
    std::vector<float> values(16);
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = float(i);
    ArrowArray a = hand_array({3,
                               {none, bytes_of<std::int32_t>({0, 1, 4, 4, 9, 10})},
                               {{12, {none, bytes_of(values)}, {}, 2}},
                               1},
                              releases);
    HandSchema s("+l", {HandSchema("f")});
    const float* child_values = static_cast<const float*>(a.children[0]->buffers[1]);
    {
      const PackedBatch<float> batch = arrow::import_batch<float>(&a, s.get());
      CHECK(a.release == nullptr);
      REQUIRE(batch.batch_size() == 3);
      CHECK(batch.data().data() == child_values + 2 + 1);  // child offset + offsets[1]
      CHECK(batch.shape_of(0) == Shape{3, 1});
      CHECK(batch.shape_of(1) == Shape{0, 1});
      CHECK(numbers_of(batch.element(2)) == std::vector<double>{6, 7, 8, 9, 10});
      CHECK(releases == 0);  // the batch holds the array
    }
    CHECK(releases == 1);
  }
  SECTION("large_list<fixed_size_list<fixed_size_list<int16, 2>, 3>>: elements (L_i, 3, 2)") {
    std::vector<std::int16_t> values(30);
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = std::int16_t(i);
    ArrowArray a = hand_array({2,
                               {none, bytes_of<std::int64_t>({0, 2, 5})},
                               {{5, {none}, {{15, {none}, {{30, {none, bytes_of(values)}, {}}}}}}}},
                              releases);
    HandSchema s("+L", {HandSchema("+w:3", {HandSchema("+w:2", {HandSchema("s")})})});
    const PackedBatch<std::int16_t> batch = arrow::import_batch<std::int16_t>(&a, s.get());
    CHECK(batch.shape_of(0) == Shape{2, 3, 2});
    CHECK(batch.shape_of(1) == Shape{3, 3, 2});
    CHECK(numbers_of(batch.element(1)).front() == 12);
  }
  SECTION("list_view: in order shared, out of order and overlapping copied") {
    const std::vector<float> values{0, 1, 2, 3, 4, 5};
    const auto import = [&](std::vector<std::int32_t> offsets, std::vector<std::int32_t> sizes) {
      ArrowArray a = hand_array({std::int64_t(offsets.size()),
                                 {none, bytes_of(offsets), bytes_of(sizes)},
                                 {{6, {none, bytes_of(values)}, {}}}},
                                releases);
      HandSchema s("+vl", {HandSchema("f")});
      return arrow::import_batch<float>(&a, s.get());
    };
    const PackedBatch<float> in_order = import({0, 2, 2}, {2, 0, 3});
    CHECK(releases == 0);  // shared
    CHECK(numbers_of(in_order.element(2)) == std::vector<double>{2, 3, 4});
    const PackedBatch<float> reordered = import({4, 0, 1}, {2, 1, 3});
    CHECK(releases == 1);  // copied: released at once
    CHECK(numbers_of(reordered.element(0)) == std::vector<double>{4, 5});
    CHECK(numbers_of(reordered.element(2)) == std::vector<double>{1, 2, 3});
    const PackedBatch<float> overlapping = import({0, 1}, {3, 3});
    CHECK(numbers_of(overlapping.element(1)) == std::vector<double>{1, 2, 3});
  }
  SECTION("null rows: an error naming the row, or empty elements") {
    const std::vector<float> values{0, 1, 2, 3, 4, 5};
    const Node node{3,
                    {bits_of({1, 0, 1}), bytes_of<std::int32_t>({0, 2, 4, 6})},
                    {{6, {none, bytes_of(values)}, {}}},
                    0,
                    1};
    HandSchema s("+l", {HandSchema("f")});
    ArrowArray a = hand_array(node, releases);
    TBATCH_CHECK_THROWS_WITH(arrow::import_batch<float>(&a, s.get()), ValueError,
                             "arrow::import_batch: row 1 is null; pass NullPolicy::empty");
    CHECK(releases == 1);  // released on the error
    ArrowArray b = hand_array(node, releases);
    const PackedBatch<float> batch =
        arrow::import_batch<float>(&b, s.get(), arrow::NullPolicy::empty);
    CHECK(batch.shape_of(1) == Shape{0, 1});
    CHECK(numbers_of(batch.element(0)) == std::vector<double>{0, 1});
    CHECK(numbers_of(batch.element(2)) == std::vector<double>{4, 5});
  }
  SECTION("bool bitmaps from any bit offset, unaligned buffers: copied") {
    ArrowArray a = hand_array({2,
                               {none, bytes_of<std::int32_t>({0, 3, 5})},
                               {{5, {none, bits_of({0, 0, 0, 1, 0, 1, 1, 0})}, {}, 3}}},
                              releases);
    HandSchema s("+l", {HandSchema("b")});
    const PackedBatch<bool> flags = arrow::import_batch<bool>(&a, s.get());
    CHECK(numbers_of(flags.data()) == std::vector<double>{1, 0, 1, 1, 0});
    CHECK(releases == 1);
    ArrowArray b = hand_array({1,
                               {none, bytes_of<std::int32_t>({0, 2})},
                               {{2, {none, bytes_of<float>({1.5f, 2.5f}, 1)}, {}}}},
                              releases);
    HandSchema f("+l", {HandSchema("f")});
    const PackedBatch<float> unaligned = arrow::import_batch<float>(&b, f.get());
    CHECK(numbers_of(unaligned.data()) == std::vector<double>{1.5, 2.5});
    CHECK(releases == 2);
  }
}

namespace {

/// A variable_shape_tensor array of two rows over values 0..n-1: `offsets` delimit the rows'
/// data, `shapes` their stored shapes (2 dims each), `valid` the struct's validity.
Node variable_shape(std::vector<std::int32_t> offsets, std::vector<std::int32_t> shapes,
                    std::vector<int> valid = {1, 1}) {
  std::vector<float> values(std::size_t(offsets.back()));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float(i);
  const bool nulls = !(valid[0] && valid[1]);
  return Node{2,
              {nulls ? bits_of(valid) : none},
              {{2, {none, bytes_of(offsets)}, {{offsets.back(), {none, bytes_of(values)}, {}}}},
               {2, {none}, {{4, {none, bytes_of(shapes)}, {}}}}},
              0,
              nulls ? 1 : 0};
}

HandSchema variable_shape_schema(const std::string& json) {
  return HandSchema(
      "+s",
      {HandSchema("+l", {HandSchema("f")}, "data"), HandSchema("+w:2", {HandSchema("i")}, "shape")},
      "", extension("arrow.variable_shape_tensor", json));
}

}  // namespace

TEST_CASE("arrow::import_batch reads the variable_shape_tensor extension", "[arrow]") {
  int releases = 0;
  SECTION("each row its own shape, shared without a copy") {
    HandSchema s =
        variable_shape_schema("{\"uniform_shape\": [null, 3], \"dim_names\": [\"H\", \"W\"]}");
    ArrowArray a = hand_array(variable_shape({0, 6, 9}, {2, 3, 1, 3}), releases);
    const float* values = static_cast<const float*>(a.children[0]->children[0]->buffers[1]);
    const PackedBatch<float> batch = arrow::import_batch<float>(&a, s.get());
    CHECK(batch.shape_of(0) == Shape{2, 3});
    CHECK(batch.shape_of(1) == Shape{1, 3});
    CHECK(batch.data().data() == values);
    CHECK(numbers_of(batch.element(1)) == std::vector<double>{6, 7, 8});
  }
  SECTION("a permutation gives the logical order (copied)") {
    HandSchema s = variable_shape_schema("{\"permutation\": [1, 0]}");
    ArrowArray a = hand_array(variable_shape({0, 6, 8}, {2, 3, 2, 1}), releases);
    const PackedBatch<float> batch = arrow::import_batch<float>(&a, s.get());
    CHECK(releases == 1);
    CHECK(batch.shape_of(0) == Shape{3, 2});
    CHECK(batch.shape_of(1) == Shape{1, 2});
    CHECK(numbers_of(batch.element(0)) == std::vector<double>{0, 3, 1, 4, 2, 5});
    CHECK(numbers_of(batch.element(1)) == std::vector<double>{6, 7});
  }
  SECTION("null rows become empty elements with the batch's last dim") {
    HandSchema s = variable_shape_schema("");
    ArrowArray a = hand_array(variable_shape({0, 6, 6}, {2, 3, 0, 0}, {1, 0}), releases);
    const PackedBatch<float> batch =
        arrow::import_batch<float>(&a, s.get(), arrow::NullPolicy::empty);
    CHECK(batch.shape_of(1) == Shape{0, 3});
  }
  SECTION("shapes that disagree with the data, uniform_shape or the last dim") {
    const auto fails = [&](Node node, const std::string& json, auto matcher_type,
                           const std::string& message) {
      HandSchema s = variable_shape_schema(json);
      ArrowArray a = hand_array(node, releases);
      using E = typename decltype(matcher_type)::type;
      TBATCH_CHECK_THROWS_WITH(arrow::import_batch<float>(&a, s.get()), E, message);
    };
    fails(variable_shape({0, 6, 8}, {2, 3, 2, 1}), "{\"uniform_shape\": [null, 3]}",
          std::type_identity<ValueError>{},
          "row 1 has size 1 in dim 1; uniform_shape fixes it at 3");
    fails(variable_shape({0, 6, 8}, {2, 2, 2, 1}), "", std::type_identity<ValueError>{},
          "row 0's shape holds 4 values but its data list has 6");
    fails(variable_shape({0, 6, 8}, {2, 3, 2, 1}), "", std::type_identity<ShapeError>{},
          "row 1's last dim is 1 but earlier rows' is 3");
    fails(variable_shape({0, 6, 8}, {2, 3, 2, 1}), "{\"permutation\": [1, 1]}",
          std::type_identity<ValueError>{}, "not a permutation of 0 to 1");
    fails(variable_shape({0, 6, 8}, {2, 3, 2, 1}), "{\"uniform_shape\": [1,",
          std::type_identity<ValueError>{}, "the extension metadata is not the JSON expected");
    CHECK(releases == 5);  // each array released once, on its error
  }
}

TEST_CASE("arrow::import_tensor reads fixed-size rows", "[arrow]") {
  int releases = 0;
  std::vector<float> values(24);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float(i);
  SECTION("nested fixed_size_list: (N, 3, 2) without a copy") {
    ArrowArray a =
        hand_array({4, {none}, {{12, {none}, {{24, {none, bytes_of(values)}, {}}}}}}, releases);
    const float* first = static_cast<const float*>(a.children[0]->children[0]->buffers[1]);
    HandSchema s("+w:3", {HandSchema("+w:2", {HandSchema("f")})});
    const Tensor<float> t = arrow::import_tensor<float>(&a, s.get());
    CHECK(t.shape() == Shape{4, 3, 2});
    CHECK(t.data() == first);
  }
  SECTION("fixed_shape_tensor with a permutation: a strided view") {
    ArrowArray a = hand_array({4, {none}, {{24, {none, bytes_of(values)}, {}}}}, releases);
    HandSchema s(
        "+w:6", {HandSchema("f")}, "",
        extension("arrow.fixed_shape_tensor", "{\"shape\": [2, 3], \"permutation\": [1, 0]}"));
    const Tensor<float> t = arrow::import_tensor<float>(&a, s.get());
    CHECK(t.shape() == Shape{4, 3, 2});
    CHECK(t.at({1, 2, 1}) == 6 + 1 * 3 + 2);  // stored (row 1, 1, 2)
    CHECK(releases == 0);
  }
  SECTION("a null row, a shape that is not the storage's") {
    ArrowArray a = hand_array(
        {4, {bits_of({1, 1, 0, 1})}, {{24, {none, bytes_of(values)}, {}}}, 0, 1}, releases);
    HandSchema s("+w:6", {HandSchema("f")});
    TBATCH_CHECK_THROWS_WITH(arrow::import_tensor<float>(&a, s.get()), ValueError,
                             "arrow::import_tensor: the array holds a null (entry 2 of level 0)");
    ArrowArray b = hand_array({4, {none}, {{24, {none, bytes_of(values)}, {}}}}, releases);
    HandSchema bad("+w:6", {HandSchema("f")}, "",
                   extension("arrow.fixed_shape_tensor", "{\"shape\": [4, 2]}"));
    TBATCH_CHECK_THROWS_WITH(arrow::import_tensor<float>(&b, bad.get()), ValueError,
                             "the fixed_shape_tensor's shape holds 8 values");
    CHECK(releases == 2);
  }
}

TEST_CASE("arrow import: every malformed array is an error, and the array is released once",
          "[arrow]") {
  int releases = 0;
  const std::vector<float> values{0, 1, 2, 3};
  const Node good{
      2, {none, bytes_of<std::int32_t>({0, 1, 4})}, {{4, {none, bytes_of(values)}, {}}}};
  const auto fails = [&](Node node, HandSchema schema, auto error, const std::string& message) {
    const int before = releases;
    ArrowArray a = hand_array(node, releases);
    using E = typename decltype(error)::type;
    TBATCH_CHECK_THROWS_WITH(arrow::import_batch<float>(&a, schema.get()), E, message);
    CHECK(releases == before + 1);
    CHECK(a.release == nullptr);
  };
  const std::type_identity<ValueError> value_error;
  const std::type_identity<TypeError> type_error;
  const auto list = [] { return HandSchema("+l", {HandSchema("f")}); };

  SECTION("structure") {
    Node n = good;
    n.buffers[1] = bytes_of<std::int32_t>({0, 3, 1});
    fails(n, list(), value_error,
          "row 1 has offset 3 and the next offset 1; offsets must be >= 0 and must not decrease");
    n.buffers[1] = bytes_of<std::int32_t>({0, 1, 5});
    fails(n, list(), value_error,
          "row 1 needs 4 entries from entry 1 of level 0, which has length 4");
    n.buffers[1] = none;
    fails(n, list(), value_error, "the list array's offsets buffer is null but it has 2 rows");
    n = good;
    n.buffers.pop_back();
    fails(n, list(), value_error, "the list array has 1 buffers; its type has 2");
    n = good;
    n.length = -1;
    fails(n, list(), value_error, "the list array has length -1 and offset 0");
    n = good;
    n.offset = std::numeric_limits<std::int64_t>::max();
    fails(n, list(), value_error, "with a sum that fits int64");
    n = good;
    n.null_count = 3;
    fails(n, list(), value_error, "has null_count 3; expected -1 to 2");
    n.null_count = 1;
    fails(n, list(), value_error, "has null_count 1 but a null validity bitmap");
    n = good;
    n.children[0].buffers[1] = none;
    fails(n, list(), value_error, "the values buffer is null but row 0 has values");
    n = good;
    n.children[0].buffers[0] = bits_of({1, 1, 0, 1});
    n.children[0].null_count = 1;
    fails(n, list(), value_error,
          "row 1 holds a null (entry 2 of level 0); tbatch tensors hold no nulls");
  }
  SECTION("types") {
    fails(good, HandSchema("+m", {HandSchema("f")}), type_error, "has format \"+m\"");
    fails(good, HandSchema("+l", {HandSchema("g")}), type_error,
          "the array's values are float64, not float32");
    fails(good, HandSchema("+l", {HandSchema("u")}), type_error, "has format \"u\"");
    fails(good, HandSchema("+l", {HandSchema("f"), HandSchema("f")}), value_error,
          "has 2 children; expected 1");
    fails(good, HandSchema("+w:x", {HandSchema("f")}), type_error, "has format \"+w:x\"");
    fails(good, HandSchema("+w:2", {HandSchema("f")}), type_error,
          "import_batch reads list, large_list");
  }
  SECTION("null and released structs") {
    TBATCH_CHECK_THROWS_WITH(arrow::import_batch<float>(nullptr, list().get()), ValueError,
                             "arrow::import_batch: the ArrowArray is null");
    ArrowArray a = hand_array(good, releases);
    ArrowArray released = a;
    released.release = nullptr;
    TBATCH_CHECK_THROWS_WITH(arrow::import_batch<float>(&released, list().get()), ValueError,
                             "the ArrowArray is released");
    CHECK(releases == 0);  // nothing taken
    TBATCH_CHECK_THROWS_WITH(arrow::import_batch<float>(&a, nullptr), ValueError,
                             "the array's ArrowSchema is null");
    CHECK(releases == 1);
  }
}

TEST_CASE("arrow export: errors and the int32 limit", "[arrow]") {
  const PackedBatch<float> batch = batch_of<float>({{2, 1}});
  ArrowSchema schema{};
  TBATCH_CHECK_THROWS_WITH(arrow::export_batch(batch, nullptr, &schema), ValueError,
                           "arrow::export_batch: out is null");
  // 2^31 rows of no values: the int32 offsets cannot hold them.
  const index_t rows = index_t(1) << 31;
  const PackedBatch<float> huge(Tensor<float>::empty({rows, 0}), Tensor<index_t>({1, 1}, {rows}),
                                Tensor<index_t>({2}, {0, rows}));
  Exported e;
  TBATCH_CHECK_THROWS_WITH(
      arrow::export_batch(huge, &e.array, &e.schema, {arrow::ListOffsets::int32}), ValueError,
      "a list offset is 2147483648, outside int32");
  CHECK(e.array.release == nullptr);
  arrow::export_batch(huge, &e.array, &e.schema);  // int64 holds them
  CHECK(e.array.length == 1);
  TBATCH_CHECK_THROWS_WITH(arrow::export_tensor(Tensor<float>::zeros({}), &e.array, &e.schema),
                           ShapeError, "arrow::export_tensor: a 0-d tensor has no rows");
}
