#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

using namespace tbatch;
using namespace tbatch::testing;

namespace {

using Names = TensorDict::Names;

/// Applies an index expression held in a vector (index() takes an initializer_list).
template <class Target>
Target index_with(const Target& target, const std::vector<TensorIndex>& i) {
  switch (i.size()) {
    case 0:
      return target.index({});
    case 1:
      return target.index({i[0]});
    case 2:
      return target.index({i[0], i[1]});
    case 3:
      return target.index({i[0], i[1], i[2]});
    case 4:
      return target.index({i[0], i[1], i[2], i[3]});
    case 5:
      return target.index({i[0], i[1], i[2], i[3], i[4]});
    case 6:
      return target.index({i[0], i[1], i[2], i[3], i[4], i[5]});
    case 7:
      return target.index({i[0], i[1], i[2], i[3], i[4], i[5], i[6]});
    case 8:
      return target.index({i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7]});
  }
  throw std::logic_error("index_with: at most 8 indices");
}

Shape shape_with(const Shape& batch, std::initializer_list<index_t> features) {
  Shape s = batch;
  for (index_t f : features)
    s.push_back(f);
  return s;
}

/// A TensorDict over `batch` with entries of several dtypes and feature shapes, one of them
/// strided (not contiguous), and a nested TensorDict with one extra batch dim of size 2.
TensorDict random_dict(const Shape& batch, std::mt19937& rng) {
  TensorDict td(batch);
  td.set("f32", random_tensor<float>(shape_with(batch, {2}), rng));
  td.set("i64", random_tensor<std::int64_t>(batch, rng));
  td.set("u8", random_tensor<std::uint8_t>(shape_with(batch, {3, 1}), rng));
  td.set("flag", random_tensor<bool>(shape_with(batch, {2}), rng));
  // batch + [3] stored with all dims reversed, so that its batch dims cannot be merged.
  Shape reversed{3};
  for (auto s = batch.end(); s != batch.begin();)
    reversed.push_back(*--s);
  std::vector<index_t> order;
  for (index_t d = static_cast<index_t>(batch.size()); d >= 0; --d)
    order.push_back(d);
  td.set("strided", random_tensor<std::int16_t>(reversed, rng).permute(order));
  TensorDict nested(shape_with(batch, {2}));
  nested.set("half", random_tensor<Eigen::half>(shape_with(batch, {2, 1}), rng));
  nested.set("deep",
             TensorDict({{"u32", random_tensor<std::uint32_t>(shape_with(batch, {2, 2, 1}), rng)}},
                        shape_with(batch, {2, 2})));
  td.set("nested", nested);
  return td;
}

/// Checks every tensor of `result` against ref(the same entry of `original`).
template <class Ref>
void check_entries(const TensorDict& original, const TensorDict& result, Ref&& ref) {
  REQUIRE(result.keys(true, true).size() == original.keys(true, true).size());
  for (const NestedKey& key : original.keys(true, true)) {
    INFO("entry " << key);
    original.get_any(key).visit([&](const auto& t) {
      using T = typename std::decay_t<decltype(t)>::value_type;
      const Tensor<T> expected = ref(t);
      const Tensor<T> got = result.get<T>(key);
      CHECK(got.shape() == expected.shape());
      CHECK(equal(got, expected));
    });
  }
}

/// Every tensor's shape starts with the batch size of the TensorDict holding it, every nested
/// TensorDict's batch size and names with its parent's.
void check_nesting(const TensorDict& td) {
  for (const NestedKey& key : td.keys(false)) {
    INFO("entry " << key);
    if (!td.is_dict(key)) {
      const Shape shape = td.get_any(key).shape();
      REQUIRE(shape.size() >= td.batch_size().size());
      CHECK(Shape(shape.begin(), shape.begin() + td.batch_dims()) == td.batch_size());
      continue;
    }
    const TensorDict child = td.get_dict(key);
    REQUIRE(child.batch_dims() >= td.batch_dims());
    for (index_t d = 0; d < td.batch_dims(); ++d) {
      CHECK(child.batch_size()[d] == td.batch_size()[d]);
      CHECK(child.names()[d] == td.names()[d]);
    }
    check_nesting(child);
  }
}

bool shares(const TensorDict& a, const TensorDict& b, const NestedKey& key) {
  return a.get_any(key).shares_storage_with(b.get_any(key));
}

/// Python's slice(start, stop, step).indices(size), computed independently of the view layer.
std::vector<index_t> slice_positions(index_t size, std::optional<index_t> start,
                                     std::optional<index_t> stop, index_t step) {
  auto clamp = [&](std::optional<index_t> v, index_t fallback, index_t lo, index_t hi) {
    if (!v) return fallback;
    index_t x = *v < 0 ? *v + size : *v;
    return std::min(std::max(x, lo), hi);
  };
  std::vector<index_t> out;
  if (step > 0) {
    for (index_t i = clamp(start, 0, 0, size), e = clamp(stop, size, 0, size); i < e; i += step)
      out.push_back(i);
  } else {
    for (index_t i = clamp(start, size - 1, -1, size - 1), e = clamp(stop, -1, -1, size - 1); i > e;
         i += step)
      out.push_back(i);
  }
  return out;
}

TensorDict robots() {
  return TensorDict(
      {{"joints", Tensor<float>(Shape{2, 3, 4})}, {"battery", Tensor<float>(Shape{2, 3})}}, {2, 3});
}

}  // namespace

// ===================================================================== the reference's examples

TEST_CASE("reference: batch size, batch dims and feature dims", "[tensor_dict][golden]") {
  TensorDict td = robots();
  CHECK(td.batch_size() == Shape{2, 3});
  CHECK(td.shape() == Shape{2, 3});
  CHECK(td.batch_dims() == 2);
  CHECK(td.dim() == 2);
  const Shape joints = td.get<float>("joints").shape();
  CHECK(Shape(joints.begin() + td.batch_dims(), joints.end()) == Shape{4});
  const Shape battery = td.get<float>("battery").shape();
  CHECK(Shape(battery.begin() + td.batch_dims(), battery.end()) == Shape{});
  CHECK(td.numel() == 6);
  CHECK(td.size() == 2);
  CHECK(td.size(1) == 3);
  CHECK(td.size(-1) == 3);
}

TEST_CASE("reference: a value whose leading dims are not the batch size is rejected",
          "[tensor_dict][golden][errors]") {
  TensorDict td = robots();
  TBATCH_CHECK_THROWS_WITH(td.set("contact", Tensor<float>(Shape{3})), ShapeError,
                           "TensorDict::set: batch dimension mismatch, got batch_size=[2, 3] and "
                           "value.shape=[3] for key 'contact'");
  // A number is a 0-d tensor: the same error.
  TBATCH_CHECK_THROWS_WITH(td.set("contact", Tensor<float>(Shape{}, 1.f)), ShapeError,
                           "got batch_size=[2, 3] and value.shape=[] for key 'contact'");
  CHECK(!td.contains("contact"));
  // Expanded to the batch size it is accepted.
  td.set("contact", Tensor<bool>(Shape{}, false).expand({2, 3}));
  CHECK(td.get<bool>("contact").shape() == Shape{2, 3});
  // The constructor checks the same way.
  TBATCH_CHECK_THROWS_WITH(TensorDict({{"x", Tensor<float>(Shape{3})}}, {2}), ShapeError,
                           "TensorDict: batch dimension mismatch, got batch_size=[2] and "
                           "value.shape=[3] for key 'x'");
}

TEST_CASE("reference: nested TensorDicts start with their parent's batch size",
          "[tensor_dict][golden]") {
  TensorDict td = robots();
  td.set("target", {{"joints", Tensor<float>(Shape{2, 3, 4})}});
  CHECK(td.get_dict("target").batch_size() == Shape{2, 3});
  // A nested TensorDict may have more batch dims.
  td.set("grid", TensorDict({{"cells", Tensor<float>(Shape{2, 3, 5, 7})}}, {2, 3, 5}));
  CHECK(td.get_dict("grid").batch_size() == Shape{2, 3, 5});
  TBATCH_CHECK_THROWS_WITH(td.set("bad", TensorDict(Shape{3})), ShapeError,
                           "batch dimension mismatch, got batch_size=[2, 3] and "
                           "value.batch_size=[3] for key 'bad'");
  TBATCH_CHECK_THROWS_WITH(td.set("bad", {{"x", Tensor<float>(Shape{2})}}), ShapeError,
                           "got batch_size=[2, 3] and value.shape=[2] for key 'x'");
}

TEST_CASE("reference: an empty batch size is never inferred and cannot be indexed",
          "[tensor_dict][golden][errors]") {
  TensorDict data({{"images", Tensor<float>(Shape{3, 4})}, {"labels", Tensor<float>(Shape{3})}});
  CHECK(data.batch_size() == Shape{});
  TBATCH_CHECK_THROWS_WITH(
      data.index({0}), IndexError,
      "TensorDict::index: indexing a tensordict with batch_dims==0 is not permitted. Got index 0.");
  TBATCH_CHECK_THROWS_WITH(data.index({Slice{1, 3}, NewAxis}), IndexError,
                           "batch_dims==0 is not permitted. Got index (1:3, None).");
  TBATCH_CHECK_THROWS_WITH(data.begin(), TypeError,
                           "iteration over a TensorDict with batch_dims==0 is not permitted");
  CHECK(data.size() == 0);
  CHECK(data.numel() == 1);

  TensorDict empty;
  CHECK(empty.keys().empty());
  CHECK(empty.batch_size() == Shape{});
  CHECK(empty.is_empty());
}

TEST_CASE("reference: auto_batch_size_ infers the longest shared leading dims",
          "[tensor_dict][golden]") {
  TensorDict labelled(
      {{"images", Tensor<float>(Shape{3, 4})}, {"labels", Tensor<float>(Shape{3})}});
  CHECK(labelled.auto_batch_size_().batch_size() == Shape{3});

  TensorDict data(
      {{"images", Tensor<float>(Shape{3, 4, 5})}, {"masks", Tensor<float>(Shape{3, 4})}});
  CHECK(data.auto_batch_size_().batch_size() == Shape{3, 4});
  CHECK(data.auto_batch_size_(1).batch_size() == Shape{3});
  CHECK(data.auto_batch_size_(0).batch_size() == Shape{});

  // Nested TensorDicts first get the longest batch size of their own entries.
  TensorDict outer({{"x", Tensor<float>(Shape{3, 4, 9})},
                    {"inner", TensorDict({{"y", Tensor<float>(Shape{3, 4, 5, 6})},
                                          {"z", Tensor<float>(Shape{3, 4, 5})}})}});
  outer.auto_batch_size_();
  CHECK(outer.batch_size() == Shape{3, 4});
  CHECK(outer.get_dict("inner").batch_size() == Shape{3, 4, 5});
  outer.auto_batch_size_(1);
  CHECK(outer.batch_size() == Shape{3});
  CHECK(outer.get_dict("inner").batch_size() == Shape{3});

  // Without entries the batch size stays (cut to the cap).
  TensorDict bare(Shape{2, 5});
  CHECK(bare.auto_batch_size_().batch_size() == Shape{2, 5});
  CHECK(bare.auto_batch_size_(1).batch_size() == Shape{2});
  TBATCH_CHECK_THROWS_WITH(bare.auto_batch_size_(-1), ValueError,
                           "TensorDict::auto_batch_size_: batch_dims -1 must be >= 0");
}

TEST_CASE("reference: set_batch_size accepts any compatible size", "[tensor_dict][golden]") {
  TensorDict data({{"images", Tensor<float>(Shape{3, 4})}}, {3});
  data.set_batch_size({3, 4});
  CHECK(data.batch_size() == Shape{3, 4});
  TBATCH_CHECK_THROWS_WITH(data.set_batch_size({4}), ShapeError,
                           "TensorDict::set_batch_size: the Tensor images has shape [3, 4] which "
                           "is incompatible with the batch-size [4].");
  CHECK(data.batch_size() == Shape{3, 4});
  data.set_batch_size({});
  CHECK(data.batch_size() == Shape{});

  TensorDict parent({{"inner", TensorDict({{"x", Tensor<float>(Shape{3, 4})}}, {3})}}, {3});
  TBATCH_CHECK_THROWS_WITH(parent.set_batch_size({3, 4}), ShapeError,
                           "the TensorDict inner has batch-size [3] which is incompatible with "
                           "the batch-size [3, 4].");
}

TEST_CASE("reference: batch indexing is not entry indexing", "[tensor_dict][golden]") {
  TensorDict td = robots();
  CHECK(td.index({0}).batch_size() == Shape{3});
  CHECK(td.index({Ellipsis, Slice{{}, 2}}).get<float>("joints").shape() == Shape{2, 2, 4});
  CHECK(td.get<float>("joints").index({Ellipsis, Slice{{}, 2}}).shape() == Shape{2, 3, 2});
  CHECK(td.index({Slice{}, NewAxis}).batch_size() == Shape{2, 1, 3});
}

TEST_CASE("reference: boolean masks select leading batch elements", "[tensor_dict][golden]") {
  TensorDict td = robots();
  const Tensor<bool> mask(Shape{2, 3}, std::vector<bool>{true, false, true, false, false, true});
  CHECK(td.index({mask}).batch_size() == Shape{3});
  CHECK(td.index({mask}).get<float>("joints").shape() == Shape{3, 4});
  CHECK(td.index({Tensor<bool>(Shape{2}, std::vector<bool>{true, false})}).batch_size() ==
        Shape{1, 3});
}

TEST_CASE("reference: integers and slices give views, new keys stay local",
          "[tensor_dict][golden]") {
  TensorDict td = robots();
  TensorDict sub = td.index({0});
  Tensor<float> battery = sub.get<float>("battery");
  for_each([](float& x) { x += 1; }, battery.view());
  CHECK(equal(td.get<float>("battery"),
              Tensor<float>(Shape{2, 3}, std::vector<float>{1, 1, 1, 0, 0, 0})));
  sub.set("new", Tensor<float>(Shape{3}));
  CHECK(sub.contains("new"));
  CHECK(!td.contains("new"));
}

TEST_CASE("reference: writing into indexed batch elements", "[tensor_dict][golden]") {
  TensorDict td = robots();
  td.index_put({0}, TensorDict({{"battery", Tensor<float>(Shape{3}, 1.f)}}, {3}));
  td.index_put({1}, TensorDict({{"joints", Tensor<float>(Shape{3, 4}, 1.f)},
                                {"battery", Tensor<float>(Shape{3}, 1.f)}},
                               {3}));
  td.index_put({Slice{}, 0}, 0);
  CHECK(equal(td.get<float>("battery"),
              Tensor<float>(Shape{2, 3}, std::vector<float>{0, 1, 1, 0, 1, 1})));
  CHECK(equal(td.get<float>("joints").index({1, 2}), Tensor<float>(Shape{4}, 1.f)));
  CHECK(equal(td.get<float>("joints").index({0, 2}), Tensor<float>(Shape{4}, 0.f)));
  CHECK(equal(td.get<float>("joints").index({Slice{}, 0}), Tensor<float>(Shape{2, 4}, 0.f)));
}

TEST_CASE("reference: the first write into an empty TensorDict creates the entries",
          "[tensor_dict][golden]") {
  TensorDict td(Shape{4});
  td.index_put(
      {Slice{1, 3}},
      TensorDict({{"x", Tensor<float>(Shape{2, 3}, 2.f)},
                  {"inner", TensorDict({{"y", Tensor<std::int32_t>(Shape{2, 5}, 7)}}, {2, 5})}},
                 {2}));
  REQUIRE(td.contains("x"));
  CHECK(td.get<float>("x").shape() == Shape{4, 3});
  CHECK(equal(td.get<float>("x").index({0}), Tensor<float>(Shape{3}, 0.f)));
  CHECK(equal(td.get<float>("x").index({2}), Tensor<float>(Shape{3}, 2.f)));
  CHECK(td.get_dict("inner").batch_size() == Shape{4, 5});
  CHECK(td.get<std::int32_t>({"inner", "y"}).shape() == Shape{4, 5});
  CHECK(equal(td.get<std::int32_t>({"inner", "y"}).index({Slice{1, 3}}),
              Tensor<std::int32_t>(Shape{2, 5}, 7)));
  CHECK(equal(td.get<std::int32_t>({"inner", "y"}).index({3}), Tensor<std::int32_t>(Shape{5}, 0)));
}

TEST_CASE("reference: shape operations apply to the batch dims", "[tensor_dict][golden]") {
  TensorDict td = robots();
  CHECK(td.reshape({6}).get<float>("joints").shape() == Shape{6, 4});
  CHECK(td.permute({1, 0}).get<float>("joints").shape() == Shape{3, 2, 4});
  CHECK(td.unsqueeze(-1).get<float>("joints").shape() == Shape{2, 3, 1, 4});
  CHECK(td.flatten(0, 1).unflatten(0, {2, 3}).batch_size() == Shape{2, 3});
  std::vector<Shape> unbound;
  for (const TensorDict& t : td.unbind(1))
    unbound.push_back(t.batch_size());
  CHECK(unbound == std::vector<Shape>{Shape{2}, Shape{2}, Shape{2}});
  std::vector<Shape> pieces;
  for (const TensorDict& t : td.split(std::vector<index_t>{2, 1}, 1))
    pieces.push_back(t.batch_size());
  CHECK(pieces == std::vector<Shape>{Shape{2, 2}, Shape{2, 1}});
}

TEST_CASE(
    "reference: view, permute, unbind and expand share storage; writes into expanded "
    "memory are refused",
    "[tensor_dict][golden]") {
  TensorDict td = robots();
  CHECK(shares(td, td.view({6}), "joints"));
  CHECK(shares(td, td.permute({1, 0}), "joints"));
  CHECK(shares(td, td.unbind(0)[1], "joints"));
  TensorDict expanded = td.unsqueeze(0).expand({4, 2, 3});
  CHECK(shares(td, expanded, "joints"));
  CHECK(expanded.get<float>("joints").stride(0) == 0);
  TBATCH_CHECK_THROWS_WITH(expanded.index_put({Slice{}}, 1.f), ValueError,
                           "entry 'joints' has shape [4, 2, 3, 4] and strides [0, 12, 4, 1], "
                           "which put several of its elements at one address (an expanded view)");
  TBATCH_CHECK_THROWS_WITH(
      expanded.index_put({Slice{}, 0},
                         TensorDict({{"battery", Tensor<float>(Shape{4, 3})}}, {4, 3})),
      ValueError, "entry 'battery' has shape [4, 2, 3]");
  CHECK(equal(td.get<float>("battery"), Tensor<float>(Shape{2, 3}, 0.f)));
  // One element of the expanded dim would still write the memory all four share.
  TBATCH_CHECK_THROWS_WITH(expanded.index_put({0, 1}, 5.f), ValueError,
                           "several of its elements at one address");
  CHECK(equal(td.get<float>("battery"), Tensor<float>(Shape{2, 3}, 0.f)));
  // clone() gives separate copies that accept the write.
  TensorDict copies = expanded.clone();
  copies.index_put({Slice{}}, 1.f);
  CHECK(!shares(td, copies, "joints"));
  CHECK(equal(td.get<float>("battery").index({0}), Tensor<float>(Shape{3}, 0.f)));
}

TEST_CASE("reference: dimension names", "[tensor_dict][golden][names]") {
  TensorDict td(Shape{3, 4}, {"robot", std::nullopt});
  CHECK(td.names() == Names{"robot", std::nullopt});
  td = td.refine_names({Ellipsis, "time"});
  CHECK(td.names() == Names{"robot", "time"});
  td.set_names({"env", "step"});
  CHECK(td.names() == Names{"env", "step"});
  td = td.rename({"agent", "t"});
  CHECK(td.names() == Names{"agent", "t"});
  td = td.rename({{"agent", "robot"}});
  CHECK(td.names() == Names{"robot", "t"});

  CHECK(td.index({0}).names() == Names{"t"});
  CHECK(td.permute({1, 0}).names() == Names{"t", "robot"});
  CHECK(td.unsqueeze(0).names() == Names{std::nullopt, "robot", "t"});
  CHECK(td.reshape({12}).names() == Names{std::nullopt});

  TBATCH_CHECK_THROWS_WITH(td.set_names({"a"}), ValueError,
                           "TensorDict::set_names: got 1 names ['a'] for batch_dims 2; expected "
                           "one name (or std::nullopt) per batch dim");
  TBATCH_CHECK_THROWS_WITH(TensorDict(Shape{3, 4}, {"a", "b", "c"}), ValueError,
                           "TensorDict: got 3 names ['a', 'b', 'c'] for batch_dims 2");
  CHECK(td.names() == Names{"robot", "t"});
}

TEST_CASE("reference: nested TensorDicts share their parent's names",
          "[tensor_dict][golden][names]") {
  TensorDict td(Shape{3, 4}, {"robot", "time"});
  td.set("inner", TensorDict({{"x", Tensor<float>(Shape{3, 4, 2})}}, {3, 4, 2}, {"a", "b", "c"}));
  CHECK(td.get_dict("inner").names() == Names{"robot", "time", "c"});
  td.set_names({"env", std::nullopt});
  CHECK(td.get_dict("inner").names() == Names{"env", std::nullopt, "c"});
  td.set({"made", "x"}, Tensor<float>(Shape{3, 4}));
  CHECK(td.get_dict("made").names() == Names{"env", std::nullopt});
  CHECK(td.get_dict("made").batch_size() == Shape{3, 4});
  TBATCH_CHECK_THROWS_WITH(td.set_names({"c", "z"}), ValueError,
                           "name 'c' is given to batch dims 0 and 2; names must be unique");
  CHECK(td.names() == Names{"env", std::nullopt});
}

TEST_CASE("reference: a TensorDict is not exactly a dict", "[tensor_dict][golden]") {
  TensorDict td({{"a", Tensor<std::int64_t>::arange(3)},
                 {"nested", TensorDict({{"b", Tensor<float>(Shape{3, 2})}}, {3})}},
                {3});
  std::vector<Shape> steps;
  for (const TensorDict& x : td)
    steps.push_back(x.batch_size());
  CHECK(steps == std::vector<Shape>{Shape{}, Shape{}, Shape{}});
  std::vector<std::int64_t> values;
  for (const TensorDict& x : td)
    values.push_back(x.get<std::int64_t>("a").to_vector()[0]);
  CHECK(values == std::vector<std::int64_t>{0, 1, 2});
  CHECK(td.size() == 3);
  CHECK(td.keys().size() == 2);
  STATIC_REQUIRE(!std::is_constructible_v<bool, TensorDict>);
  STATIC_REQUIRE(!std::is_convertible_v<TensorDict, bool>);
  CHECK(!td.is_empty());
  CHECK(td.contains("a"));
  CHECK(td.contains({"nested", "b"}));
  CHECK(!td.contains("b"));
  CHECK((td == td.clone()).all());
  CHECK(all_equal(td, td.clone()).all());
  TensorDict other = td.clone();
  other.set("extra", Tensor<float>(Shape{3}));
  TBATCH_CHECK_THROWS_WITH(td == other, KeyError,
                           "TensorDict::operator==: the TensorDicts have different keys: ['a', "
                           "'nested'] and ['a', 'nested', 'extra']");
  // is_empty tests for leaves: only empty sub-TensorDicts is empty.
  TensorDict hollow({{"inner", TensorDict(Shape{2})}}, {2});
  CHECK(hollow.is_empty());
  CHECK(hollow.keys().size() == 1);
}

// ===================================================================== keys, get, set, locking

TEST_CASE("get, get_any, get_dict, contains and keys", "[tensor_dict][keys]") {
  TensorDict td({{"a", Tensor<float>(Shape{2, 1})},
                 {"n", TensorDict({{"b", Tensor<std::int8_t>(Shape{2})},
                                   {"m", TensorDict({{"c", Tensor<bool>(Shape{2, 2})}}, {2, 2})}},
                                  {2})}},
                {2});
  CHECK(td.keys() == std::vector<std::string>{"a", "n"});
  CHECK(td.keys(false) == std::vector<NestedKey>{"a", "n"});
  CHECK(td.keys(true) == std::vector<NestedKey>{"a", "n", {"n", "b"}, {"n", "m"}, {"n", "m", "c"}});
  CHECK(td.keys(true, true) == std::vector<NestedKey>{"a", {"n", "b"}, {"n", "m", "c"}});
  CHECK(td.get_any({"n", "m", "c"}).dtype() == DType::boolean);
  CHECK(td.get_any("a").shape() == Shape{2, 1});
  CHECK(td.is_dict("n"));
  CHECK(!td.is_dict({"n", "b"}));
  CHECK(td.contains(std::vector<std::string>{"n", "m", "c"}));
  CHECK(!td.contains({"n", "x"}));
  CHECK(!td.contains({"a", "x"}));
  CHECK(td.get_dict({"n", "m"}).batch_size() == Shape{2, 2});

  TBATCH_CHECK_THROWS_WITH(td.get<float>("x"), KeyError,
                           "TensorDict::get: key 'x' not found in TensorDict with keys ['a', 'n']");
  TBATCH_CHECK_THROWS_WITH(td.get<float>({"n", "x"}), KeyError,
                           "key ('n', 'x') not found: the nested TensorDict 'n' has keys ['b', "
                           "'m']");
  TBATCH_CHECK_THROWS_WITH(td.get<float>({"a", "x"}), KeyError,
                           "key ('a', 'x') not found: 'a' is a tensor, not a nested TensorDict");
  TBATCH_CHECK_THROWS_WITH(td.get<double>("a"), TypeError,
                           "TensorDict::get: entry 'a' has dtype float32, not the requested "
                           "float64");
  TBATCH_CHECK_THROWS_WITH(td.get<float>("n"), TypeError,
                           "entry 'n' is a nested TensorDict, not a tensor; use get_dict");
  TBATCH_CHECK_THROWS_WITH(td.get_any("n"), TypeError,
                           "TensorDict::get_any: entry 'n' is a nested");
  TBATCH_CHECK_THROWS_WITH(td.get_dict("a"), TypeError,
                           "TensorDict::get_dict: entry 'a' is a tensor, not a nested TensorDict");
  TBATCH_CHECK_THROWS_WITH(td.get<float>(std::vector<std::string>{}), KeyError,
                           "TensorDict::get: the key is an empty path; expected at least one "
                           "string");
  TBATCH_CHECK_THROWS_WITH(td.contains(std::vector<std::string>{}), KeyError,
                           "TensorDict::contains: the key is an empty path");
  TBATCH_CHECK_THROWS_WITH(td.is_dict("zz"), KeyError, "TensorDict::is_dict: key 'zz' not found");
  TBATCH_CHECK_THROWS_WITH(NestedKey(static_cast<const char*>(nullptr)), KeyError,
                           "NestedKey: the key is a null pointer");
}

TEST_CASE("set replaces values, creates nested paths and checks them", "[tensor_dict][keys]") {
  TensorDict td(Shape{2});
  td.set("a", Tensor<float>(Shape{2}));
  td.set("a", Tensor<std::int32_t>(Shape{2, 7}));
  CHECK(td.get_any("a").dtype() == DType::int32);
  CHECK(td.keys() == std::vector<std::string>{"a"});
  td.set({"x", "y", "z"}, Tensor<double>(Shape{2, 1}));
  CHECK(td.get_dict({"x", "y"}).batch_size() == Shape{2});
  td.set({"x", "w"}, AnyTensor(Tensor<bool>(Shape{2})));
  CHECK(td.keys(true, true) == std::vector<NestedKey>{"a", {"x", "y", "z"}, {"x", "w"}});
  TBATCH_CHECK_THROWS_WITH(td.set({"a", "b"}, Tensor<float>(Shape{2})), TypeError,
                           "TensorDict::set: cannot set key ('a', 'b'): 'a' is a tensor, not a "
                           "nested TensorDict");
  TBATCH_CHECK_THROWS_WITH(td.set({"q", "r"}, Tensor<float>(Shape{3})), ShapeError,
                           "got batch_size=[2] and value.shape=[3] for key ('q', 'r')");
  CHECK(!td.contains("q"));  // a failed set creates nothing
  TBATCH_CHECK_THROWS_WITH(
      TensorDict({{"a", Tensor<float>(Shape{2})}, {"a", Tensor<float>(Shape{2})}}, {2}), KeyError,
      "TensorDict: key 'a' is given more than once");
  // The value is stored, not copied: writes show through.
  Tensor<float> shared(Shape{2});
  td.set("shared", shared);
  shared.at({1}) = 4.f;
  CHECK(td.get<float>("shared").at({1}) == 4.f);
  // Self-insertion copies the structure; there is no cycle.
  td.set("self", td);
  CHECK(td.get_dict("self").keys() == std::vector<std::string>{"a", "x", "shared"});
}

TEST_CASE("erase, select, exclude and update", "[tensor_dict][keys]") {
  TensorDict td(
      {{"a", Tensor<float>(Shape{2})},
       {"b", Tensor<float>(Shape{2, 3})},
       {"n", TensorDict({{"c", Tensor<float>(Shape{2})}, {"d", Tensor<float>(Shape{2})}}, {2})}},
      {2});
  TensorDict s = td.select({"b", {"n", "d"}});
  CHECK(s.keys(true, true) == std::vector<NestedKey>{"b", {"n", "d"}});
  CHECK(shares(s, td, "b"));
  CHECK(td.select({{"n", "c"}, "n"}).keys(true, true) ==
        std::vector<NestedKey>{{"n", "c"}, {"n", "d"}});
  TBATCH_CHECK_THROWS_WITH(td.select({"zz"}), KeyError, "TensorDict::select: key 'zz' not found");
  CHECK(td.select({"zz", "a"}, false).keys() == std::vector<std::string>{"a"});
  CHECK(td.exclude({"a", {"n", "c"}, "missing"}).keys(true, true) ==
        std::vector<NestedKey>{"b", {"n", "d"}});

  TensorDict e = td;
  e.erase({"n", "c"});
  e.erase("a");
  CHECK(e.keys(true, true) == std::vector<NestedKey>{"b", {"n", "d"}});
  CHECK(td.keys(true, true).size() == 4);  // copies do not share keys
  TBATCH_CHECK_THROWS_WITH(e.erase("a"), KeyError, "TensorDict::erase: key 'a' not found");

  TensorDict u = td;
  u.update(TensorDict({{"a", Tensor<std::int8_t>(Shape{2})},
                       {"z", Tensor<float>(Shape{2})},
                       {"n", TensorDict({{"e", Tensor<float>(Shape{2, 5})}}, {2})}},
                      {2}));
  CHECK(u.keys(true, true) ==
        std::vector<NestedKey>{"a", "b", {"n", "c"}, {"n", "d"}, {"n", "e"}, "z"});
  CHECK(u.get_any("a").dtype() == DType::int8);
  // update is all or nothing.
  TensorDict before = u;
  TBATCH_CHECK_THROWS_WITH(
      u.update(TensorDict({{"new", Tensor<float>(Shape{2})}, {"bad", Tensor<float>(Shape{})}})),
      ShapeError,
      "TensorDict::update: batch dimension mismatch, got batch_size=[2] and value.shape=[] for key "
      "'bad'");
  CHECK(u.keys(true, true) == before.keys(true, true));
}

TEST_CASE("lock_ rejects new and removed keys", "[tensor_dict][keys][errors]") {
  TensorDict td({{"a", Tensor<float>(Shape{2})}, {"n", TensorDict(Shape{2})}}, {2});
  td.lock_();
  CHECK(td.is_locked());
  CHECK(td.get_dict("n").is_locked());
  td.set("a", Tensor<double>(Shape{2}));  // replacing a value is allowed
  TBATCH_CHECK_THROWS_WITH(td.set("b", Tensor<float>(Shape{2})), KeyError,
                           "TensorDict::set: cannot add key 'b' to a locked TensorDict; call "
                           "unlock_() first");
  TBATCH_CHECK_THROWS_WITH(td.set({"n", "x"}, Tensor<float>(Shape{2})), KeyError,
                           "cannot add key ('n', 'x') to a locked TensorDict");
  TBATCH_CHECK_THROWS_WITH(td.set({"m", "x"}, Tensor<float>(Shape{2})), KeyError,
                           "cannot add key ('m', 'x') to a locked TensorDict ('m' would be "
                           "created)");
  TBATCH_CHECK_THROWS_WITH(td.erase("a"), KeyError,
                           "TensorDict::erase: cannot remove key 'a' from a locked TensorDict");
  TBATCH_CHECK_THROWS_WITH(td.update(TensorDict({{"q", Tensor<float>(Shape{2})}}, {2})), KeyError,
                           "TensorDict::update: cannot add key 'q'");
  TensorDict empty(Shape{3});
  empty.lock_();
  TBATCH_CHECK_THROWS_WITH(
      empty.index_put({0}, TensorDict({{"x", Tensor<float>(Shape{})}})), KeyError,
      "TensorDict::index_put: cannot create the keys ['x'] in a locked TensorDict");
  // Results of ops are new, unlocked TensorDicts.
  CHECK(!td.index({0}).is_locked());
  td.unlock_();
  td.set("b", Tensor<float>(Shape{2}));
  CHECK(!td.get_dict("n").is_locked());
}

TEST_CASE("printing a TensorDict", "[tensor_dict]") {
  TensorDict td({{"a", Tensor<float>(Shape{3})},
                 {"n", TensorDict({{"b", Tensor<std::int64_t>(Shape{3, 2})}}, {3})}},
                {3}, {"x"});
  std::ostringstream out;
  out << td;
  CHECK(out.str() ==
        "TensorDict(fields={a: Tensor(shape=[3], dtype=float32), n: TensorDict(fields={b: "
        "Tensor(shape=[3, 2], dtype=int64)}, batch_size=[3], names=['x'])}, batch_size=[3], "
        "names=['x'])");
}

// ===================================================================== AnyTensor

TEMPLATE_TEST_CASE("AnyTensor holds a Tensor of any dtype", "[any_tensor]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  const Tensor<T> t = iota<T>(Shape{2, 3});
  AnyTensor any = t;
  CHECK(any.dtype() == dtype_of<T>);
  CHECK(any.shape() == Shape{2, 3});
  CHECK(any.dim() == 2);
  CHECK(any.numel() == 6);
  CHECK(any.holds<T>());
  CHECK(equal(any.get<T>(), t));
  CHECK(any.shares_storage_with(AnyTensor(t)));
  CHECK(!any.shares_storage_with(any.clone()));
  CHECK(equal(any.clone().get<T>(), t));
  const AnyTensor z = AnyTensor::zeros(dtype_of<T>, Shape{4});
  CHECK(equal(z.get<T>(), Tensor<T>(Shape{4})));
  CHECK(AnyTensor::empty(dtype_of<T>, Shape{1, 2}).shape() == Shape{1, 2});
  const AnyTensor transposed = any.with_layout(layout::transpose(any.layout(), 0, 1));
  CHECK(!transposed.is_contiguous());
  CHECK(equal(transposed.get<T>(), t.transpose(0, 1)));
  CHECK(transposed.contiguous().is_contiguous());
  CHECK(equal(transposed.reshaped({6}, "test").get<T>(), t.transpose(0, 1).reshape({6})));
  CHECK(AnyTensor(any.equal_elements(AnyTensor(t.clone()), "test")).all_nonzero());
  if constexpr (std::is_same_v<T, float>) {
    TBATCH_CHECK_THROWS_WITH(any.get<double>(), TypeError,
                             "AnyTensor::get: the tensor has dtype float32, not the requested "
                             "float64");
  } else {
    TBATCH_CHECK_THROWS_WITH(any.get<float>("here"), TypeError,
                             std::string("here: the tensor has dtype ") +
                                 std::string(dtype_name_of<T>) + ", not the requested float32");
    CHECK(!any.shares_storage_with(AnyTensor(Tensor<float>(Shape{2, 3}))));
  }
}

TEMPLATE_TEST_CASE("AnyTensor compares and tests elements as a plain loop does", "[any_tensor]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(7);
  // Small values so equal elements are common; strided views so the walk is not one run.
  const Tensor<T> a = random_tensor<T>(Shape{5, 8}, rng, 2).slice(1, 0, 8, 2);
  const Tensor<T> b = random_tensor<T>(Shape{4, 5}, rng, 2).transpose(0, 1);
  REQUIRE(a.shape() == b.shape());
  const Tensor<bool> equal = AnyTensor(a).equal_elements(AnyTensor(b), "test");
  bool all = true, any = false;
  for (index_t i = 0; i < a.size(0); ++i)
    for (index_t j = 0; j < a.size(1); ++j) {
      CHECK(equal.at({i, j}) == (detail::widen(a.at({i, j})) == detail::widen(b.at({i, j}))));
      all = all && detail::widen(a.at({i, j})) != 0;
      any = any || detail::widen(a.at({i, j})) != 0;
    }
  CHECK(AnyTensor(a).all_nonzero() == all);
  CHECK(AnyTensor(a).any_nonzero() == any);
  CHECK(AnyTensor(Tensor<T>(Shape{0, 3})).all_nonzero());
  CHECK(!AnyTensor(Tensor<T>(Shape{0, 3})).any_nonzero());
  if constexpr (FloatingElement<T>) {
    // -0 equals 0 and is zero; NaN equals nothing and is non-zero, whatever their bits.
    const T nan = std::numeric_limits<T>::quiet_NaN();
    const Tensor<T> x(Shape{3}, std::vector<T>{T(-0.0f), nan, T(1)});
    const Tensor<T> y(Shape{3}, std::vector<T>{T(0.0f), nan, T(1)});
    CHECK(AnyTensor(x).equal_elements(AnyTensor(y), "test").to_vector() ==
          std::vector<bool>{true, false, true});
    CHECK(!AnyTensor(Tensor<T>(Shape{1}, T(-0.0f))).any_nonzero());
    CHECK(AnyTensor(Tensor<T>(Shape{1}, nan)).all_nonzero());
    // Infinities equal themselves only; a NaN with its sign bit set is still a NaN; the largest
    // finite value is not infinity.
    const T inf = std::numeric_limits<T>::infinity(), top = std::numeric_limits<T>::max();
    const Tensor<T> p(Shape{5}, std::vector<T>{inf, -inf, T(-nan), top, T(-2)});
    const Tensor<T> q(Shape{5}, std::vector<T>{inf, inf, T(-nan), inf, T(-2)});
    CHECK(AnyTensor(p).equal_elements(AnyTensor(q), "test").to_vector() ==
          std::vector<bool>{true, false, false, false, true});
    CHECK(AnyTensor(Tensor<T>(Shape{2}, std::vector<T>{-inf, T(-nan)})).all_nonzero());
  }
}

TEST_CASE("element conversion never reaches undefined behaviour", "[any_tensor]") {
  using detail::convert_element;
  CHECK(convert_element<std::int8_t>(127) == std::int8_t(127));
  CHECK(!convert_element<std::int8_t>(128));
  CHECK(!convert_element<std::uint8_t>(-1));
  CHECK(convert_element<std::int32_t>(1.9) == 1);
  CHECK(convert_element<std::int32_t>(-1.9) == -1);
  CHECK(!convert_element<std::int32_t>(std::nan("")));
  CHECK(!convert_element<std::int64_t>(9.3e18));
  CHECK(convert_element<std::int64_t>(-9.2e18).has_value());
  CHECK(!convert_element<std::uint32_t>(4294967296.0));
  CHECK(convert_element<std::uint32_t>(4294967295.0) == 4294967295u);
  CHECK(!convert_element<Eigen::half>(1e5));
  CHECK(!convert_element<Eigen::half>(std::int64_t(70000)));
  CHECK(static_cast<float>(*convert_element<Eigen::half>(2.5)) == 2.5f);
  CHECK(std::isinf(
      static_cast<float>(*convert_element<Eigen::half>(std::numeric_limits<double>::infinity()))));
  CHECK(!convert_element<float>(1e300));
  CHECK(convert_element<double>(1e300) == 1e300);
  CHECK(convert_element<bool>(0.5) == true);
  CHECK(convert_element<bool>(Eigen::half(0)) == false);
  CHECK(convert_element<float>(true) == 1.f);
  CHECK(convert_element<std::uint16_t>(std::uint32_t(65535)) == 65535);
  CHECK(!convert_element<std::uint16_t>(std::uint32_t(65536)));
  CHECK(static_cast<float>(*convert_element<Eigen::bfloat16>(std::int8_t(-3))) == -3.f);
}

// ===================================================================== every dtype

TEMPLATE_TEST_CASE("set, get and index every dtype", "[tensor_dict][dtypes]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  const Tensor<T> x = iota<T>(Shape{3, 4, 2});
  const Tensor<T> y = iota<T>(Shape{3, 4});
  TensorDict td({{"x", x}, {"inner", TensorDict({{"y", y}}, {3, 4})}}, {3, 4});
  CHECK(equal(td.get<T>("x"), x));
  CHECK(equal(td.get<T>({"inner", "y"}), y));
  CHECK(td.get_any("x").dtype() == dtype_of<T>);

  CHECK(equal(td.index({1}).get<T>("x"), x.index({1})));
  CHECK(
      equal(td.index({Slice{}, Slice{3, 0, -2}}).get<T>("x"), x.index({Slice{}, Slice{3, 0, -2}})));
  CHECK(equal(td.index({Ellipsis, 2}).get<T>({"inner", "y"}), y.index({Ellipsis, 2})));
  CHECK(equal(td.index({Ellipsis, 2}).get<T>("x"), x.index({Slice{}, 2})));
  const Tensor<index_t> rows(Shape{2}, std::vector<index_t>{2, -3});
  CHECK(equal(td.index({rows}).get<T>("x"), x.index({rows})));
  const Tensor<bool> mask(Shape{3, 4}, std::vector<bool>{true, false, false, true, false, false,
                                                         false, false, true, true, true, false});
  CHECK(equal(td.index({mask}).get<T>("x"), x.index({mask})));
  CHECK(equal(td.index({mask}).get<T>({"inner", "y"}), y.index({mask})));

  TensorDict copy = td.clone();
  copy.index_put({0}, value_of<T>(1));
  CHECK(equal(copy.get<T>("x").index({0}), Tensor<T>(Shape{4, 2}, value_of<T>(1))));
  CHECK(equal(copy.get<T>({"inner", "y"}).index({0}), Tensor<T>(Shape{4}, value_of<T>(1))));
  CHECK(equal(copy.get<T>("x").index({1}), x.index({1})));
  copy.index_put({rows, 1}, td.index({Slice{0, 2}, 0}));
  CHECK(equal(copy.get<T>("x").index({2, 1}), x.index({0, 0})));
  CHECK(equal(copy.get<T>("x").index({0, 1}), x.index({1, 0})));
  CHECK(equal(td.get<T>("x"), x));  // the original was cloned
}

TEMPLATE_TEST_CASE("shape ops on every dtype match the same op on each tensor",
                   "[tensor_dict][dtypes]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  const Tensor<T> x = iota<T>(Shape{2, 3, 5});
  TensorDict td({{"x", x}}, {2, 3});
  CHECK(equal(td.reshape({3, -1}).get<T>("x"), x.reshape({3, 2, 5})));
  CHECK(equal(td.view({6}).get<T>("x"), x.view_as({6, 5})));
  CHECK(equal(td.permute({1, 0}).get<T>("x"), x.permute({1, 0, 2})));
  CHECK(equal(td.transpose(0, -1).get<T>("x"), x.transpose(0, 1)));
  CHECK(equal(td.unsqueeze(2).get<T>("x"), x.unsqueeze(2)));
  CHECK(equal(td.unsqueeze(0).squeeze().get<T>("x"), x));
  CHECK(equal(td.unsqueeze(1).squeeze(1).get<T>("x"), x));
  CHECK(equal(td.flatten().get<T>("x"), x.flatten(0, 1)));
  CHECK(equal(td.flatten().unflatten(0, {2, 3}).get<T>("x"), x));
  CHECK(equal(td.expand({4, 2, 3}).get<T>("x"), x.expand({4, 2, 3, 5})));
  const auto unbound = td.unbind(1);
  REQUIRE(unbound.size() == 3);
  for (index_t i = 0; i < 3; ++i)
    CHECK(equal(unbound[i].get<T>("x"), x.select(1, i)));
  const auto pieces = td.split(2, 1);
  REQUIRE(pieces.size() == 2);
  CHECK(equal(pieces[1].get<T>("x"), x.narrow(1, 2, 1)));
  const auto chunks = td.chunk(2, 0);
  REQUIRE(chunks.size() == 2);
  CHECK(equal(chunks[1].get<T>("x"), x.narrow(0, 1, 1)));
  CHECK(equal(td.clone().get<T>("x"), x));
  CHECK(equal(td.repeat({2, 1}).get<T>("x").index({Slice{2, 4}}), x));
  CHECK(equal(td.repeat_interleave(2, 1).get<T>("x").index({Slice{}, 3}), x.index({Slice{}, 1})));

  const TensorDict stacked = TensorDict::stack({td, td.clone()}, 1);
  CHECK(stacked.batch_size() == Shape{2, 2, 3});
  CHECK(equal(stacked.get<T>("x").select(1, 1), x));
  const TensorDict joined = TensorDict::cat({td, td.index({Slice{0, 1}})}, 0);
  CHECK(joined.batch_size() == Shape{3, 3});
  CHECK(equal(joined.get<T>("x").index({2}), x.index({0})));

  const TensorDict eq = td == td.clone();
  CHECK(equal(eq.get<bool>("x"), Tensor<bool>(Shape{2, 3, 5}, true)));
  CHECK(eq.all());
  CHECK(!(td != td).any());
}

// ===================================================================== views and copies

TEST_CASE("views share storage, copies do not", "[tensor_dict][views]") {
  std::mt19937 rng(11);
  const TensorDict td = random_dict(Shape{3, 4}, rng);
  const std::vector<NestedKey> contiguous_keys{"f32", "i64", "u8", "flag", {"nested", "half"}};
  auto all_share = [&](const TensorDict& result, const std::vector<NestedKey>& keys) {
    for (const NestedKey& key : keys) {
      INFO(key);
      CHECK(shares(td, result, key));
    }
  };
  auto none_share = [&](const TensorDict& result) {
    for (const NestedKey& key : td.keys(true, true)) {
      INFO(key);
      CHECK(!shares(td, result, key));
    }
  };
  const auto all_keys = td.keys(true, true);
  all_share(td.index({1}), all_keys);
  all_share(td.index({Slice{{}, {}, 2}, NewAxis, Ellipsis}), all_keys);
  all_share(td.permute({1, 0}), all_keys);
  all_share(td.transpose(0, 1), all_keys);
  all_share(td.unsqueeze(1), all_keys);
  all_share(td.unsqueeze(0).squeeze(), all_keys);
  all_share(td.unflatten(1, {2, 2}), all_keys);
  all_share(td.expand({2, 3, 4}), all_keys);
  all_share(td.unbind(1)[3], all_keys);
  all_share(td.split(2, 0)[1], all_keys);
  all_share(td.chunk(2, 1)[0], all_keys);
  all_share(td.contiguous(), contiguous_keys);
  // reshape / flatten are views for contiguous batch dims, copies for the strided entry.
  all_share(td.reshape({12}), contiguous_keys);
  all_share(td.flatten(), contiguous_keys);
  CHECK(!shares(td, td.reshape({12}), "strided"));
  CHECK(!shares(td, td.contiguous(), "strided"));
  TBATCH_CHECK_THROWS_WITH(
      td.view({12}), ShapeError,
      "TensorDict::view: entry 'strided' of shape [3, 4, 3] and strides [1, 3, 12] "
      "cannot be viewed with batch_size [12] without copying; use reshape");
  const Tensor<index_t> positions(Shape{2}, std::vector<index_t>{0, 2});
  none_share(td.index({positions}));
  none_share(td.index({Tensor<bool>(Shape{3}, std::vector<bool>{true, false, true})}));
  none_share(td.clone());
  none_share(td.repeat({1, 1}));
  none_share(td.repeat_interleave(1, 0));
  none_share(TensorDict::stack({td}, 0));
  none_share(TensorDict::cat({td}, 0));
  // Writes through a view show in the original.
  TensorDict view = td.index({Slice{1, 3}, 2});
  view.index_put({0}, 9);
  CHECK(td.get<std::int64_t>("i64").at({1, 2}) == 9);
  CHECK(td.get<float>("f32").at({1, 2, 0}) == 9.f);
  CHECK(td.get<Eigen::half>({"nested", "half"}).at({1, 2, 1, 0}) == Eigen::half(9));
}

// ===================================================================== names and nesting

TEST_CASE("names and nested batch sizes follow every shape op", "[tensor_dict][names]") {
  std::mt19937 rng(5);
  TensorDict base = random_dict(Shape{2, 3, 4}, rng);
  base.set_names({"a", "b", "c"});
  const std::optional<std::string> none;
  auto check = [&](const TensorDict& td, const Names& names, const Shape& batch) {
    CHECK(td.names() == names);
    CHECK(td.batch_size() == batch);
    check_nesting(td);
    CHECK(td.get_dict("nested").batch_dims() == td.batch_dims() + 1);
    CHECK(td.get_dict("nested").names().back() == none);
  };
  check(base, {"a", "b", "c"}, {2, 3, 4});
  check(base.index({1}), {"b", "c"}, {3, 4});
  check(base.index({Slice{}, NewAxis, 0}), {"a", none, "c"}, {2, 1, 4});
  check(base.index({Ellipsis, Tensor<index_t>(Shape{2}, std::vector<index_t>{0, 0})}),
        {"a", "b", "c"}, {2, 3, 2});
  check(base.index({Tensor<bool>(Shape{2, 3}, true)}), {none, "c"}, {6, 4});
  check(base.index({Tensor<index_t>(Shape{2}), Slice{}, Tensor<index_t>(Shape{2})}), {none, "b"},
        {2, 3});
  check(base.permute({2, 0, 1}), {"c", "a", "b"}, {4, 2, 3});
  check(base.transpose(0, 2), {"c", "b", "a"}, {4, 3, 2});
  check(base.unsqueeze(3), {"a", "b", "c", none}, {2, 3, 4, 1});
  check(base.unsqueeze(-4), {none, "a", "b", "c"}, {1, 2, 3, 4});
  check(base.index({Slice{0, 1}}).squeeze(), {"b", "c"}, {3, 4});
  check(base.index({Slice{0, 1}}).squeeze(0), {"b", "c"}, {3, 4});
  check(base.squeeze(0), {"a", "b", "c"}, {2, 3, 4});
  check(base.flatten(1, 2), {"a", none}, {2, 12});
  check(base.flatten(1, 1), {"a", "b", "c"}, {2, 3, 4});
  check(base.unflatten(2, {2, -1}), {"a", "b", none, none}, {2, 3, 2, 2});
  check(base.reshape({6, 4}), {none, none}, {6, 4});
  check(base.exclude({"strided"}).view({24}), {none}, {24});
  check(base.unbind(1)[2], {"a", "c"}, {2, 4});
  check(base.split(std::vector<index_t>{1, 3}, -1)[1], {"a", "b", "c"}, {2, 3, 3});
  check(base.chunk(3, 1)[2], {"a", "b", "c"}, {2, 1, 4});
  check(base.expand({5, 2, -1, 4}), {none, "a", "b", "c"}, {5, 2, 3, 4});
  check(base.repeat({2, 1, 1, 2}), {none, "a", "b", "c"}, {2, 2, 3, 8});
  check(base.repeat_interleave(2, 1), {"a", "b", "c"}, {2, 6, 4});
  check(base.repeat_interleave(2), {none}, {48});
  check(base.clone(), {"a", "b", "c"}, {2, 3, 4});
  check(TensorDict::stack({base, base}, 1), {"a", none, "b", "c"}, {2, 2, 3, 4});
  check(TensorDict::cat({base, base}, 2), {"a", "b", "c"}, {2, 3, 8});
  check(base.refine_names({"a", "b", "c"}), {"a", "b", "c"}, {2, 3, 4});
  check(base.rename({Ellipsis, std::nullopt}), {"a", "b", none}, {2, 3, 4});
  check(base.rename({{"b", std::nullopt}, {"c", "z"}}), {"a", none, "z"}, {2, 3, 4});
  TensorDict cleared = base;
  cleared.clear_names();
  check(cleared, {none, none, none}, {2, 3, 4});
  CHECK(!cleared.has_names());
  CHECK(base.has_names());
  check(TensorDict::stack({base, cleared}, 0), {none, "a", "b", "c"}, {2, 2, 3, 4});
  TensorDict changed = base;
  changed.set_batch_size({2, 3});
  CHECK(changed.names() == Names{"a", "b"});
  CHECK(changed.get_dict("nested").names() == Names{"a", "b", "c", none});
  check_nesting(changed);
}

TEST_CASE("an Ellipsis after NewAxis or a 0-d mask covers the right dims", "[tensor_dict]") {
  // Regression: plan_index used to widen the Ellipsis by every dim NewAxis inserted before it.
  const Tensor<float> t = iota<float>(Shape{2, 3});
  CHECK(equal(t.index({NewAxis, Ellipsis, 0}), t.index({Slice{}, 0}).unsqueeze(0)));
  CHECK(t.index({NewAxis, NewAxis, Ellipsis, 2}).shape() == Shape{1, 1, 2});
  CHECK(t.index({Tensor<bool>(Shape{}, true), Ellipsis, 1}).shape() == Shape{1, 2});
  TensorDict td({{"x", iota<float>(Shape{2, 3, 4})}}, {2, 3}, {"a", "b"});
  const TensorDict r = td.index({NewAxis, Ellipsis, 0});
  CHECK(r.batch_size() == Shape{1, 2});
  CHECK(r.names() == Names{std::nullopt, "a"});
  CHECK(equal(r.get<float>("x"), td.get<float>("x").index({Slice{}, 0}).unsqueeze(0)));
  const TensorDict m = td.index({Tensor<bool>(Shape{}, true), Ellipsis, 1});
  CHECK(m.batch_size() == Shape{1, 2});
  CHECK(m.names() == Names{std::nullopt, "a"});
  CHECK(equal(m.get<float>("x"), td.get<float>("x").index({Slice{}, 1}).unsqueeze(0)));
}

TEST_CASE("name errors", "[tensor_dict][names][errors]") {
  TensorDict td(Shape{2, 3}, {"a", std::nullopt});
  TBATCH_CHECK_THROWS_WITH(td.refine_names({"b", "c"}), ValueError,
                           "TensorDict::refine_names: cannot refine batch dim 0 named 'a' to 'b'; "
                           "only unnamed dims take a new name");
  TBATCH_CHECK_THROWS_WITH(td.refine_names({Ellipsis, "x", Ellipsis}), ValueError,
                           "names can contain at most one Ellipsis, got 2");
  TBATCH_CHECK_THROWS_WITH(td.refine_names({"x", "y", "z", Ellipsis}), ValueError,
                           "got 3 names besides the Ellipsis for batch_dims 2; expected at most 2");
  TBATCH_CHECK_THROWS_WITH(td.rename({"x"}), ValueError,
                           "TensorDict::rename: got 1 names for batch_dims 2");
  TBATCH_CHECK_THROWS_WITH(td.rename({"x", "x"}), ValueError,
                           "name 'x' is given to batch dims 0 and 1; names must be unique");
  TBATCH_CHECK_THROWS_WITH(td.rename({{"q", "r"}}), ValueError,
                           "TensorDict::rename: no batch dim is named 'q'; the names are ['a', "
                           "None]");
  TBATCH_CHECK_THROWS_WITH(TensorDict(Shape{2, 3}, {"a", "a"}), ValueError,
                           "TensorDict: name 'a' is given to batch dims 0 and 1");
  CHECK(td.refine_names({"a", "b"}).names() == Names{"a", "b"});
  CHECK(td.refine_names({std::nullopt, "b"}).names() == Names{"a", "b"});
  TensorDict other(Shape{2, 3}, {"z", std::nullopt});
  TBATCH_CHECK_THROWS_WITH(
      TensorDict::stack({td, other}), ValueError,
      "TensorDict::stack: batch dim 0 is named 'a' in tds[0] but 'z' in tds[1]");
}

// ===================================================================== randomised comparisons

TEST_CASE("random index expressions match indexing each tensor directly", "[tensor_dict][random]") {
  std::mt19937 rng(2024);
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 400; ++trial) {
    const index_t bd = pick(1, 3);
    const Shape batch = random_shape(rng, bd, 1, 4);
    const TensorDict td = random_dict(batch, rng);
    // Kinds: 0 int, 1 slice, 2 NewAxis, 3 Ellipsis, 4 index tensor, 5 mask.
    std::vector<int> kinds;
    const int advanced = static_cast<int>(pick(0, 2));  // none, index tensors, one mask
    index_t consumed = 0;
    bool ellipsis = false, mask_used = false;
    const index_t count = pick(1, 4);
    for (index_t k = 0; k < count; ++k) {
      int kind = static_cast<int>(pick(0, 5));
      if (kind == 3 && ellipsis) kind = 1;
      if (kind == 4 && advanced != 1) kind = 0;
      if (kind == 5 && (advanced != 2 || mask_used)) kind = 1;
      const index_t uses = kind == 2 || kind == 3 ? 0 : 1;
      if (consumed + uses > bd) break;
      consumed += uses;
      ellipsis |= kind == 3;
      mask_used |= kind == 5;
      kinds.push_back(kind);
    }
    const index_t index_length = pick(0, 3);
    std::vector<TensorIndex> dict_index, tensor_index;
    index_t dim = 0;
    for (int kind : kinds) {
      const index_t size = dim < bd ? batch[dim] : 1;
      switch (kind) {
        case 0: {
          const index_t i = pick(-size, size - 1);
          dict_index.emplace_back(i);
          tensor_index.emplace_back(i);
          ++dim;
          break;
        }
        case 1: {
          Slice s;
          if (pick(0, 1)) s.start = pick(-size - 1, size + 1);
          if (pick(0, 1)) s.stop = pick(-size - 1, size + 1);
          s.step = std::vector<index_t>{1, 1, 2, 3, -1, -2}[pick(0, 5)];
          dict_index.emplace_back(s);
          tensor_index.emplace_back(s);
          ++dim;
          break;
        }
        case 2:
          dict_index.emplace_back(NewAxis);
          tensor_index.emplace_back(NewAxis);
          break;
        case 3:
          dict_index.emplace_back(Ellipsis);
          for (index_t k = 0; k < bd - consumed; ++k)
            tensor_index.emplace_back(Slice{});
          dim += bd - consumed;
          break;
        case 4: {
          Tensor<index_t> positions(Shape{index_length});
          for (index_t k = 0; k < index_length; ++k)
            positions.data()[k] = pick(-size, size - 1);
          dict_index.emplace_back(positions);
          tensor_index.emplace_back(positions);
          ++dim;
          break;
        }
        case 5: {
          Tensor<bool> mask = random_tensor<bool>(Shape{size}, rng);
          dict_index.emplace_back(mask);
          tensor_index.emplace_back(mask);
          ++dim;
          break;
        }
      }
    }
    INFO("trial " << trial << " batch " << batch);
    const TensorDict got = index_with(td, dict_index);
    CHECK(got.batch_size() == index_with(Tensor<float>(batch), tensor_index).shape());
    check_entries(td, got, [&](const auto& t) { return index_with(t, tensor_index); });
    check_nesting(got);
  }
}

TEST_CASE("random slices and masks match a plain loop", "[tensor_dict][random]") {
  std::mt19937 rng(99);
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 100; ++trial) {
    const Shape batch = random_shape(rng, 2, 0, 5);
    const Tensor<std::int32_t> x = random_tensor<std::int32_t>(shape_with(batch, {2}), rng);
    TensorDict td({{"x", x}}, batch);
    Slice s0, s1;
    if (pick(0, 1)) s0.start = pick(-6, 6);
    if (pick(0, 1)) s0.stop = pick(-6, 6);
    if (pick(0, 1)) s1.start = pick(-6, 6);
    s0.step = pick(0, 1) ? pick(1, 3) : -pick(1, 3);
    s1.step = pick(0, 1) ? pick(1, 3) : -pick(1, 3);
    const auto rows = slice_positions(batch[0], s0.start, s0.stop, s0.step);
    const auto cols = slice_positions(batch[1], s1.start, s1.stop, s1.step);
    const Tensor<std::int32_t> sliced = td.index({s0, s1}).get<std::int32_t>("x");
    REQUIRE(sliced.shape() ==
            Shape{static_cast<index_t>(rows.size()), static_cast<index_t>(cols.size()), 2});
    for_each_index(sliced.shape(), [&](const std::vector<index_t>& i) {
      CHECK(element_at(sliced, i) == element_at(x, {rows[i[0]], cols[i[1]], i[2]}));
    });

    const Tensor<bool> mask = random_tensor<bool>(batch, rng);
    const Tensor<std::int32_t> masked = td.index({mask}).get<std::int32_t>("x");
    index_t n = 0;
    for_each_index(batch, [&](const std::vector<index_t>& i) {
      if (!element_at(mask, i)) return;
      for (index_t f = 0; f < 2; ++f)
        CHECK(element_at(masked, {n, f}) == element_at(x, {i[0], i[1], f}));
      ++n;
    });
    CHECK(masked.shape() == Shape{n, 2});
  }
}

TEST_CASE("random shape ops match the same op on each tensor", "[tensor_dict][random]") {
  std::mt19937 rng(31);
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const index_t bd = pick(1, 3);
    const Shape batch = random_shape(rng, bd, 1, 4);
    const TensorDict td = random_dict(batch, rng);
    INFO("trial " << trial << " batch " << batch);
    auto norm = [&](index_t d, index_t rank) { return d < 0 ? d + rank : d; };

    std::vector<index_t> order(bd);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    check_entries(td, td.permute(order), [&](const auto& t) {
      std::vector<index_t> full = order;
      for (index_t d = bd; d < t.dim(); ++d)
        full.push_back(d);
      return t.permute(full);
    });

    const index_t a = pick(-bd, bd - 1), b = pick(-bd, bd - 1);
    check_entries(td, td.transpose(a, b),
                  [&](const auto& t) { return t.transpose(norm(a, bd), norm(b, bd)); });

    const index_t u = pick(-bd - 1, bd);
    check_entries(td, td.unsqueeze(u), [&](const auto& t) { return t.unsqueeze(norm(u, bd + 1)); });

    check_entries(td, td.squeeze(), [&](const auto& t) {
      auto out = t;
      for (index_t d = bd - 1; d >= 0; --d)
        if (batch[d] == 1) out = out.squeeze(d);
      return out;
    });
    const index_t q = pick(-bd, bd - 1);
    check_entries(td, td.squeeze(q), [&](const auto& t) { return t.squeeze(norm(q, bd)); });

    const index_t s = pick(0, bd - 1), e = pick(s, bd - 1);
    check_entries(td, td.flatten(s, e), [&](const auto& t) { return t.flatten(s, e); });

    const index_t f = pick(0, bd - 1);
    const std::vector<index_t> sizes{1, -1, 1};
    check_entries(td, td.unflatten(f, sizes), [&](const auto& t) { return t.unflatten(f, sizes); });

    std::vector<index_t> shape_sizes{td.numel()};
    if (td.numel() % 2 == 0) shape_sizes = {2, -1};
    check_entries(td, td.reshape(shape_sizes), [&](const auto& t) {
      std::vector<index_t> full{shape_sizes[0] == 2 ? 2 : td.numel()};
      if (shape_sizes.size() == 2) full.push_back(td.numel() / 2);
      for (index_t d = bd; d < t.dim(); ++d)
        full.push_back(t.size(d));
      return t.reshape(full);
    });

    std::vector<index_t> expand_sizes{pick(0, 2)};
    for (index_t d = 0; d < bd; ++d)
      expand_sizes.push_back(batch[d] == 1 ? pick(1, 3) : (pick(0, 1) ? -1 : batch[d]));
    check_entries(td, td.expand(expand_sizes), [&](const auto& t) {
      std::vector<index_t> full = expand_sizes;
      for (index_t d = bd; d < t.dim(); ++d)
        full.push_back(-1);
      return t.expand(full);
    });

    const index_t ud = pick(0, bd - 1);
    const auto unbound = td.unbind(ud);
    REQUIRE(static_cast<index_t>(unbound.size()) == batch[ud]);
    for (index_t i = 0; i < batch[ud]; ++i)
      check_entries(td, unbound[i], [&](const auto& t) { return t.select(ud, i); });

    const index_t piece = pick(1, 3);
    const auto split = td.split(piece, ud);
    const auto chunked = td.chunk(piece, ud);
    for (std::size_t i = 0; i < split.size(); ++i)
      check_entries(td, split[i], [&](const auto& t) { return t.split(piece, ud)[i]; });
    for (std::size_t i = 0; i < chunked.size(); ++i)
      check_entries(td, chunked[i], [&](const auto& t) { return t.chunk(piece, ud)[i]; });
  }
}

TEST_CASE("random repeat and repeat_interleave match a plain loop", "[tensor_dict][random]") {
  std::mt19937 rng(77);
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 40; ++trial) {
    const index_t bd = pick(1, 3);
    const Shape batch = random_shape(rng, bd, 1, 3);
    const Tensor<std::int16_t> x = random_tensor<std::int16_t>(shape_with(batch, {2}), rng);
    const TensorDict td({{"x", x}}, batch);
    INFO("trial " << trial << " batch " << batch);

    std::vector<index_t> repeats;
    const index_t lead = pick(0, 1);
    for (index_t d = 0; d < bd + lead; ++d)
      repeats.push_back(pick(0, 3));
    const Tensor<std::int16_t> tiled = td.repeat(repeats).get<std::int16_t>("x");
    Shape expected_shape;
    for (index_t d = 0; d < bd + lead; ++d)
      expected_shape.push_back(repeats[d] * (d < lead ? 1 : batch[d - lead]));
    expected_shape.push_back(2);
    REQUIRE(tiled.shape() == expected_shape);
    CHECK(tiled.is_contiguous());
    for_each_index(tiled.shape(), [&](const std::vector<index_t>& i) {
      std::vector<index_t> source;
      for (index_t d = lead; d < bd + lead; ++d)
        source.push_back(i[d] % batch[d - lead]);
      source.push_back(i.back());
      CHECK(element_at(tiled, i) == element_at(x, source));
    });

    const index_t dim = pick(0, bd - 1);
    Tensor<index_t> counts(Shape{batch[dim]});
    for (index_t k = 0; k < batch[dim]; ++k)
      counts.data()[k] = pick(0, 3);
    std::vector<index_t> positions;
    for (index_t k = 0; k < batch[dim]; ++k)
      for (index_t r = 0; r < counts.data()[k]; ++r)
        positions.push_back(k);
    const Tensor<std::int16_t> interleaved =
        td.repeat_interleave(counts, dim).get<std::int16_t>("x");
    Shape interleaved_shape = shape_with(batch, {2});
    interleaved_shape.set(dim, static_cast<index_t>(positions.size()));
    REQUIRE(interleaved.shape() == interleaved_shape);
    CHECK(interleaved.is_contiguous());
    for_each_index(interleaved.shape(), [&](const std::vector<index_t>& i) {
      std::vector<index_t> source = i;
      source[dim] = positions[i[dim]];
      CHECK(element_at(interleaved, i) == element_at(x, source));
    });
    const index_t r = pick(0, 2);
    CHECK(equal(td.repeat_interleave(r, dim).get<std::int16_t>("x"),
                td.repeat_interleave(Tensor<index_t>(Shape{1}, r), dim).get<std::int16_t>("x")));
  }
}

TEST_CASE("stack and cat match a plain loop, nested TensorDicts included",
          "[tensor_dict][random]") {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 20; ++trial) {
    const Shape batch = random_shape(rng, 2, 1, 3);
    std::vector<TensorDict> tds;
    for (int i = 0; i < 3; ++i)
      tds.push_back(random_dict(batch, rng));
    for (index_t dim = -3; dim < 3; ++dim) {
      const TensorDict stacked = TensorDict::stack(tds, dim);
      const index_t d = dim < 0 ? dim + 3 : dim;
      check_nesting(stacked);
      for (index_t i = 0; i < 3; ++i)
        check_entries(tds[i], stacked.unbind(d)[i], [](const auto& t) { return t; });
    }
    for (index_t dim = 0; dim < 2; ++dim) {
      std::vector<TensorDict> parts{tds[0], tds[1].split(1, dim)[0], tds[2]};
      const TensorDict joined = TensorDict::cat(parts, dim);
      check_nesting(joined);
      CHECK(joined.batch_size()[dim] == 2 * batch[dim] + 1);
      index_t offset = 0;
      for (const TensorDict& part : parts) {
        const index_t length = part.batch_size()[dim];
        check_entries(part,
                      joined.split(std::vector<index_t>{offset, length,
                                                        joined.batch_size()[dim] - offset - length},
                                   dim)[1],
                      [](const auto& t) { return t; });
        offset += length;
      }
    }
  }
}

// ===================================================================== error paths

TEST_CASE("index and index_put errors", "[tensor_dict][errors]") {
  TensorDict td = robots();
  TBATCH_CHECK_THROWS_WITH(td.index({0, 1, 2}), IndexError,
                           "TensorDict::index: too many indices: 3 dims indexed but only 2 can be");
  TBATCH_CHECK_THROWS_WITH(td.index({Slice{}, 3}), IndexError,
                           "TensorDict::index: index 3 is out of range for dim 1 of size 3");
  TBATCH_CHECK_THROWS_WITH(td.index({Tensor<index_t>(Shape{1}, std::vector<index_t>{5})}),
                           IndexError,
                           "TensorDict::index: index 5 is out of bounds for dim 0 with size 2");
  TBATCH_CHECK_THROWS_WITH(td.index({Tensor<bool>(Shape{3}, true)}), IndexError,
                           "TensorDict::index: the shape of the mask [3] at dim 0 does not match");
  TBATCH_CHECK_THROWS_WITH(td.index({Ellipsis, 0, Ellipsis}), IndexError,
                           "an index can only have a single ellipsis");
  TBATCH_CHECK_THROWS_WITH(td.index({1, Slice{{}, {}, 0}}), ValueError,
                           "TensorDict::index: slice step 0 at index position 1 must be non-zero");
  TBATCH_CHECK_THROWS_WITH(td.index_put({Slice{{}, {}, 0}}, 1), ValueError,
                           "TensorDict::index_put: slice step 0 at index position 0");

  TBATCH_CHECK_THROWS_WITH(
      td.index_put({0}, TensorDict({{"battery", Tensor<float>(Shape{2})}}, {2})), ShapeError,
      "TensorDict::index_put: the value has batch_size [2] but the indexed "
      "batch_size is [3]; expected a TensorDict of the indexed batch size");
  TBATCH_CHECK_THROWS_WITH(td.index_put({0}, TensorDict({{"zz", Tensor<float>(Shape{3})}}, {3})),
                           KeyError,
                           "TensorDict::index_put: key 'zz' of the value is not in the "
                           "TensorDict, whose keys there are ['joints', 'battery']");
  TBATCH_CHECK_THROWS_WITH(
      td.index_put({0}, TensorDict({{"battery", Tensor<double>(Shape{3})}}, {3})), TypeError,
      "entry 'battery' has dtype float32 but the value's has dtype float64");
  TBATCH_CHECK_THROWS_WITH(td.index_put({0}, TensorDict({{"battery", TensorDict(Shape{3})}}, {3})),
                           TypeError,
                           "entry 'battery' is a tensor but the value's is a nested TensorDict");
  TBATCH_CHECK_THROWS_WITH(
      td.index_put({0}, TensorDict({{"joints", Tensor<float>(Shape{3, 5})}}, {3})), ShapeError,
      "the value of shape [3, 5] for entry 'joints' cannot be broadcast to its indexed shape "
      "[3, 4]");
  TBATCH_CHECK_THROWS_WITH(td.index_put({0}, Tensor<float>(Shape{4})), ShapeError,
                           "the value of shape [4] for entry 'battery' cannot be broadcast to its "
                           "indexed shape [3]");
  // Nothing was written by the failed calls (everything is checked first).
  CHECK(equal(td.get<float>("joints"), Tensor<float>(Shape{2, 3, 4})));
  TensorDict ints({{"i", Tensor<std::int8_t>(Shape{2})}, {"u", Tensor<std::uint8_t>(Shape{2})}},
                  {2});
  TBATCH_CHECK_THROWS_WITH(ints.index_put({0}, 300), ValueError,
                           "TensorDict::index_put: the value 300 does not fit the dtype int8 of "
                           "entry 'i'");
  TBATCH_CHECK_THROWS_WITH(ints.index_put({0}, -1), ValueError,
                           "the value -1 does not fit the dtype uint8 of entry 'u'");
  TBATCH_CHECK_THROWS_WITH(ints.index_put({0}, Tensor<float>(Shape{}, std::nanf(""))), ValueError,
                           "the value nan does not fit the dtype int8 of entry 'i'");
  TBATCH_CHECK_THROWS_WITH(
      ints.index_put({Slice{}}, Tensor<std::int32_t>(Shape{2}, std::vector<std::int32_t>{1, 999})),
      ValueError,
      "the value of dtype int32 has elements that do not fit the dtype int8 of entry 'i'");
  CHECK(equal(ints.get<std::int8_t>("i"), Tensor<std::int8_t>(Shape{2})));
  ints.index_put({1}, 2.7);
  CHECK(ints.get<std::int8_t>("i").at({1}) == 2);
  CHECK(ints.get<std::uint8_t>("u").at({1}) == 2);
  ints.index_put({Slice{}},
                 Tensor<double>(Shape{2}, std::vector<double>{-1, 5}).index({Slice{1, 2}}));
  CHECK(equal(ints.get<std::int8_t>("i"), Tensor<std::int8_t>(Shape{2}, 5)));
  TBATCH_CHECK_THROWS_WITH(TensorDict().index_put({0}, 1), IndexError,
                           "TensorDict::index_put: indexing a tensordict with batch_dims==0 is not "
                           "permitted. Got index 0.");
}

TEST_CASE("shape op errors name the function, the argument and what was expected",
          "[tensor_dict][errors]") {
  const TensorDict td = robots();
  TBATCH_CHECK_THROWS_WITH(td.reshape({4}), ShapeError,
                           "TensorDict::reshape: shape [4] is invalid for 6 elements");
  TBATCH_CHECK_THROWS_WITH(td.reshape({-1, -1}), ShapeError,
                           "TensorDict::reshape: only one size may be -1");
  TBATCH_CHECK_THROWS_WITH(td.view({5}), ShapeError, "TensorDict::view: shape [5] is invalid");
  TBATCH_CHECK_THROWS_WITH(td.permute({0}), ShapeError,
                           "TensorDict::permute: got 1 dims [0] for batch_dims 2; expected a "
                           "permutation of all 2 batch dims");
  TBATCH_CHECK_THROWS_WITH(td.permute({1, -1}), ValueError,
                           "TensorDict::permute: dim -1 appears more than once in [1, -1]");
  TBATCH_CHECK_THROWS_WITH(td.permute({0, 2}), IndexError,
                           "TensorDict::permute: dim 2 is out of range (expected -2 to 1 for "
                           "batch_dims 2)");
  TBATCH_CHECK_THROWS_WITH(td.transpose(0, -3), IndexError,
                           "TensorDict::transpose: dim -3 is out of range (expected -2 to 1 for "
                           "batch_dims 2)");
  TBATCH_CHECK_THROWS_WITH(td.unsqueeze(4), IndexError,
                           "TensorDict::unsqueeze: dim 4 is out of range (expected -3 to 2 for "
                           "batch_dims 2)");
  TBATCH_CHECK_THROWS_WITH(td.squeeze(2), IndexError, "TensorDict::squeeze: dim 2 is out of range");
  TBATCH_CHECK_THROWS_WITH(td.flatten(1, 0), IndexError,
                           "TensorDict::flatten: start dim 1 comes after end dim 0");
  TBATCH_CHECK_THROWS_WITH(td.flatten(0, 2), IndexError,
                           "TensorDict::flatten: end dim 2 is out of range");
  TBATCH_CHECK_THROWS_WITH(TensorDict().flatten(), IndexError,
                           "TensorDict::flatten: start dim 0 is given but the TensorDict has "
                           "batch_dims==0, so it has no batch dim to use");
  TBATCH_CHECK_THROWS_WITH(td.unflatten(1, {}), ShapeError,
                           "TensorDict::unflatten: sizes must not be empty; expected sizes whose "
                           "product is 3");
  TBATCH_CHECK_THROWS_WITH(td.unflatten(1, {2, 2}), ShapeError,
                           "TensorDict::unflatten: shape [2, 2] is invalid for 3 elements");
  TBATCH_CHECK_THROWS_WITH(td.unbind(2), IndexError, "TensorDict::unbind: dim 2 is out of range");
  TBATCH_CHECK_THROWS_WITH(td.split(0, 1), ValueError,
                           "TensorDict::split: split size 0 must be positive");
  TBATCH_CHECK_THROWS_WITH(td.split(std::vector<index_t>{1, 1}, 1), ValueError,
                           "TensorDict::split: split sizes [1, 1] sum to 2 but batch dim 1 has "
                           "size 3");
  TBATCH_CHECK_THROWS_WITH(td.split(std::vector<index_t>{4, -1}, 1), ValueError,
                           "TensorDict::split: split size -1 at position 1 must be >= 0");
  TBATCH_CHECK_THROWS_WITH(td.chunk(0), ValueError, "TensorDict::chunk: chunks 0 must be positive");
  TBATCH_CHECK_THROWS_WITH(td.expand({3}), ShapeError,
                           "TensorDict::expand: got 1 sizes [3] for batch_dims 2; expected at "
                           "least 2");
  TBATCH_CHECK_THROWS_WITH(td.expand({2, 4}), ShapeError,
                           "TensorDict::expand: size 4 at dim 1 does not match the existing batch "
                           "size 3 of batch dim 1 (only size-1 dims expand; -1 keeps a size)");
  TBATCH_CHECK_THROWS_WITH(td.expand({-1, 2, 3}), ShapeError,
                           "TensorDict::expand: size -1 at new leading dim 0 must be >= 0");
  TBATCH_CHECK_THROWS_WITH(td.repeat({2}), ShapeError,
                           "TensorDict::repeat: got 1 repeats [2] for batch_dims 2; expected at "
                           "least 2");
  TBATCH_CHECK_THROWS_WITH(td.repeat({1, -2}), ValueError,
                           "TensorDict::repeat: repeat -2 at dim 1 must be >= 0");
  TBATCH_CHECK_THROWS_WITH(td.repeat_interleave(-1, 0), ValueError,
                           "TensorDict::repeat_interleave: repeats -1 must be >= 0");
  TBATCH_CHECK_THROWS_WITH(td.repeat_interleave(Tensor<index_t>(Shape{2}), 1), ShapeError,
                           "TensorDict::repeat_interleave: repeats has 2 elements but batch dim 1 "
                           "has size 3; expected 3 or 1");
  TBATCH_CHECK_THROWS_WITH(
      td.repeat_interleave(Tensor<index_t>(Shape{3}, std::vector<index_t>{1, -4, 0}), 1),
      ValueError, "TensorDict::repeat_interleave: repeats[1] = -4 must be >= 0");
  TBATCH_CHECK_THROWS_WITH(td.repeat_interleave(Tensor<index_t>(Shape{1, 1}), 0), ShapeError,
                           "repeats must be 0-d or 1-d, got shape [1, 1]");
  TBATCH_CHECK_THROWS_WITH(td.repeat_interleave(1, 5), IndexError,
                           "TensorDict::repeat_interleave: dim 5 is out of range");
  TBATCH_CHECK_THROWS_WITH(td.size(2), IndexError, "TensorDict::size: dim 2 is out of range");
}

TEST_CASE("stack, cat and comparison errors", "[tensor_dict][errors]") {
  const TensorDict td = robots();
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack({}), ValueError,
                           "TensorDict::stack: expected a non-empty list of TensorDicts");
  TBATCH_CHECK_THROWS_WITH(TensorDict::cat({}), ValueError,
                           "TensorDict::cat: expected a non-empty list of TensorDicts");
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack({td, td.index({0})}), ShapeError,
                           "TensorDict::stack: stacking tensordicts requires them to have "
                           "congruent batch sizes, got tds[1].batch_size=[3] and "
                           "tds[0].batch_size=[2, 3]");
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack({td, td}, 3), IndexError,
                           "TensorDict::stack: dim 3 is out of range (expected -3 to 2 for "
                           "batch_dims 2)");
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack({td, td.exclude({"battery"})}), KeyError,
                           "TensorDict::stack: got keys ['joints', 'battery'] and ['joints'] "
                           "which are incompatible (tds[0] and tds[1]); every TensorDict must "
                           "have the same keys");
  TensorDict other_dtype = td.clone();
  other_dtype.set("battery", Tensor<double>(Shape{2, 3}));
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack({td, other_dtype}), TypeError,
                           "TensorDict::stack: entry 'battery' has dtype float64 in tds[1] but "
                           "float32 in tds[0]; expected the same dtype");
  TensorDict other_shape = td.clone();
  other_shape.set("joints", Tensor<float>(Shape{2, 3, 5}));
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack({td, other_shape}), ShapeError,
                           "TensorDict::stack: entry 'joints' has shape [2, 3, 5] in tds[1] but "
                           "[2, 3, 4] in tds[0]; expected equal shapes");
  TBATCH_CHECK_THROWS_WITH(TensorDict::cat({td, other_shape}, 1), ShapeError,
                           "TensorDict::cat: entry 'joints' has shape [2, 3, 5] in tds[1] but "
                           "[2, 3, 4] in tds[0]; expected equal shapes except at dim 1");
  TensorDict kind = td.clone();
  kind.set("battery", TensorDict(Shape{2, 3}));
  TBATCH_CHECK_THROWS_WITH(
      TensorDict::stack({td, kind}), TypeError,
      "entry 'battery' is a tensor in tds[0] but a nested TensorDict in tds[1]");
  TensorDict n1({{"n", TensorDict(Shape{2, 3, 1})}}, {2, 3});
  TensorDict n2({{"n", TensorDict(Shape{2, 3, 2})}}, {2, 3});
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack({n1, n2}), ShapeError,
                           "TensorDict::stack: the nested TensorDict 'n' has batch_size [2, 3, 2] "
                           "in tds[1] but [2, 3, 1] in tds[0]");
  TBATCH_CHECK_THROWS_WITH(TensorDict::cat({td, td.index({Slice{}, Slice{0, 2}})}, 0), ShapeError,
                           "TensorDict::cat: cannot concatenate tensordicts whose batch sizes "
                           "differ outside dim 0: got tds[1].batch_size=[2, 2] and "
                           "tds[0].batch_size=[2, 3]");
  TBATCH_CHECK_THROWS_WITH(TensorDict::cat({TensorDict(), TensorDict()}), IndexError,
                           "TensorDict::cat: dim 0 is given but the TensorDict has batch_dims==0");
  CHECK(TensorDict::cat({td, td.index({Slice{}, Slice{0, 2}})}, 1).batch_size() == Shape{2, 5});

  TBATCH_CHECK_THROWS_WITH(td == td.index({0}), ShapeError,
                           "TensorDict::operator==: batch sizes [2, 3] and [3] differ");
  TBATCH_CHECK_THROWS_WITH(td == other_dtype, TypeError,
                           "TensorDict::operator==: entry 'battery' has dtypes float32 and "
                           "float64; expected the same dtype");
  TBATCH_CHECK_THROWS_WITH(td != other_shape, ShapeError,
                           "TensorDict::operator!=: entry 'joints' has shapes [2, 3, 4] and "
                           "[2, 3, 5]; expected the same shape");
  TBATCH_CHECK_THROWS_WITH(td == kind, TypeError,
                           "entry 'battery' is a tensor in one TensorDict and a nested "
                           "TensorDict in the other");
  TBATCH_CHECK_THROWS_WITH(
      n1 == TensorDict({{"n", TensorDict({{"q", Tensor<float>(Shape{2, 3, 1})}}, {2, 3, 1})}},
                       {2, 3}),
      KeyError, "have different keys: [] and ['q'] in the nested TensorDict 'n'");
  TensorDict changed = td.clone();
  changed.index_put({1, 2}, 3.f);
  const TensorDict eq = td == changed;
  CHECK(!eq.all());
  CHECK(eq.any());
  CHECK(equal(eq.get<bool>("battery"),
              Tensor<bool>(Shape{2, 3}, std::vector<bool>{true, true, true, true, true, false})));
  CHECK((td != changed).get<bool>("battery").at({1, 2}));
  CHECK(TensorDict().all());
  CHECK(!TensorDict().any());
}

TEST_CASE("shape ops on zero-size batch dims", "[tensor_dict]") {
  TensorDict td({{"x", Tensor<float>(Shape{0, 3, 2})}}, {0, 3});
  CHECK(td.numel() == 0);
  CHECK(td.size() == 0);
  CHECK(td.unbind(0).empty());
  CHECK(td.reshape({3, 0}).get<float>("x").shape() == Shape{3, 0, 2});
  CHECK(td.split(0, 0).size() == 1);
  CHECK(td.chunk(2, 0).size() == 2);
  CHECK(td.index({Tensor<bool>(Shape{0}, true)}).batch_size() == Shape{0, 3});
  CHECK(td.repeat({2, 2}).batch_size() == Shape{0, 6});
  CHECK(td.repeat_interleave(3).batch_size() == Shape{0});
  CHECK(TensorDict::stack({td, td}, 2).batch_size() == Shape{0, 3, 2});
  CHECK(TensorDict::cat({td, td}, 1).batch_size() == Shape{0, 6});
  std::vector<Shape> steps;
  for (const TensorDict& x : td)
    steps.push_back(x.batch_size());
  CHECK(steps.empty());
}

// ===================================================================== ragged stacking

TEST_CASE("stack_ragged: episodes of different lengths become padded or packed batches",
          "[tensor_dict][ragged]") {
  const Tensor<float> obs0 = iota<float>(Shape{3, 2}), obs1 = iota<float>(Shape{5, 2}, 7);
  const Tensor<float> reward0(Shape{3}, std::vector<float>{1, 2, 3});
  const Tensor<float> reward1(Shape{5}, std::vector<float>{4, 5, 6, 7, 8});
  const TensorDict a({{"obs", obs0}, {"reward", reward0}}, {3});
  const TensorDict b({{"obs", obs1}, {"reward", reward1}}, {5});
  const RaggedTensorDict r = TensorDict::stack_ragged({a, b});
  CHECK(r.batch_size() == std::vector<index_t>{2, -1});
  CHECK(r.batch_dims() == 2);
  CHECK(r.size() == 2);
  CHECK(r.layout() == RaggedLayout::padded);
  CHECK(r.batch_size_of(1) == Shape{5});
  CHECK(r.keys() == std::vector<std::string>{"obs", "reward"});
  CHECK(r.is_ragged("obs"));
  CHECK(r.dtype("obs") == DType::float32);

  const PaddedBatch<float> padded = r.to_padded<float>("obs");
  CHECK(padded.data().shape() == Shape{2, 5, 2});
  CHECK(equal(padded.shape_per_tensor(), Tensor<index_t>(Shape{2, 1}, std::vector<index_t>{3, 5})));
  CHECK(equal(padded.element(0), obs0));
  CHECK(equal(padded.element(1), obs1));
  CHECK(equal(padded.data().index({0, Slice{3, 5}}), Tensor<float>(Shape{2, 2}, 0.f)));
  const PaddedBatch<float> minus = r.to_padded("obs", -1.f);
  CHECK(equal(minus.data().index({0, Slice{3, 5}}), Tensor<float>(Shape{2, 2}, -1.f)));
  CHECK(equal(minus.element(1), obs1));

  const PackedBatch<float> packed = r.to_packed<float>("obs");
  CHECK(packed.data().shape() == Shape{8, 2});
  CHECK(equal(packed.first_idx(), Tensor<index_t>(Shape{3}, std::vector<index_t>{0, 3, 8})));
  CHECK(equal(packed.element(1), obs1));

  // An entry without feature dims gets a unit last dim in its batches, not in to_list.
  const PaddedBatch<float> rewards = r.to_padded<float>("reward");
  CHECK(rewards.data().shape() == Shape{2, 5, 1});
  CHECK(equal(rewards.data().index({0, Slice{}, 0}),
              Tensor<float>(Shape{5}, std::vector<float>{1, 2, 3, 0, 0})));
  CHECK(r.to_packed<float>("reward").data().shape() == Shape{8, 1});
  const auto list = r.to_list<float>("reward");
  REQUIRE(list.size() == 2);
  CHECK(equal(list[0], reward0));
  CHECK(equal(list[1], reward1));

  const TensorDict second = r.element(1);
  CHECK(second.batch_size() == Shape{5});
  CHECK(equal(second.get<float>("obs"), obs1));
  CHECK(equal(second.get<float>("reward"), reward1));
  const auto all = r.unbind();
  REQUIRE(all.size() == 2);
  CHECK((all[0] == a).all());
  CHECK((all[1] == b).all());
  // Elements view the stored batch.
  CHECK(second.get<float>("obs").shares_storage_with(padded.data()));

  TBATCH_CHECK_THROWS_WITH(r.get<float>("obs"), ShapeError,
                           "RaggedTensorDict::get: entry 'obs' differs in shape between the "
                           "stacked TensorDicts; use to_padded, to_packed or to_list");
  TBATCH_CHECK_THROWS_WITH(r.to_padded<double>("obs"), TypeError,
                           "RaggedTensorDict::to_padded: entry 'obs' has dtype float32, not the "
                           "requested float64");
  TBATCH_CHECK_THROWS_WITH(r.to_list<float>("zz"), KeyError,
                           "RaggedTensorDict::to_list: key 'zz' not found in RaggedTensorDict with "
                           "keys ['obs', 'reward']");
  TBATCH_CHECK_THROWS_WITH(r.element(2), IndexError,
                           "RaggedTensorDict::element: element index 2 is out of range for a "
                           "batch of 2");
}

TEST_CASE("stack_ragged: dense entries, nested TensorDicts and the packed layout",
          "[tensor_dict][ragged]") {
  std::mt19937 rng(3);
  auto make = [&](index_t n, index_t k) {
    return TensorDict(
        {{"x", random_tensor<std::int32_t>(Shape{2, 3}, rng)},
         {"y", random_tensor<std::int32_t>(Shape{2, k, 4}, rng)},
         {"scalar", random_tensor<std::int32_t>(Shape{2}, rng)},
         {"inner", TensorDict({{"z", random_tensor<std::uint8_t>(Shape{2, n, 6}, rng)}}, {2, n})}},
        {2});
  };
  const std::vector<TensorDict> tds{make(1, 3), make(4, 1), make(2, 3)};
  for (RaggedLayout layout : {RaggedLayout::padded, RaggedLayout::packed}) {
    const RaggedTensorDict r = TensorDict::stack_ragged(tds, layout);
    CHECK(r.layout() == layout);
    CHECK(r.batch_size() == std::vector<index_t>{3, 2});
    CHECK(!r.is_ragged("x"));
    CHECK(r.is_ragged("y"));
    CHECK(r.is_dict("inner"));
    CHECK(r.contains({"inner", "z"}));
    CHECK(!r.contains({"x", "z"}));
    CHECK(r.get<std::int32_t>("x").shape() == Shape{3, 2, 3});
    for (index_t i = 0; i < 3; ++i)
      CHECK(equal(r.get<std::int32_t>("x").select(0, i), tds[i].get<std::int32_t>("x")));
    // A dense entry as a batch is a view of the stacked tensor.
    CHECK(r.to_padded<std::int32_t>("x").data().shares_storage_with(r.get<std::int32_t>("x")));
    CHECK(equal(r.to_packed<std::int32_t>("x").element(2), tds[2].get<std::int32_t>("x")));
    CHECK(r.to_padded<std::int32_t>("scalar").data().shape() == Shape{3, 2});
    const RaggedTensorDict inner = r.get_dict("inner");
    CHECK(inner.batch_size() == std::vector<index_t>{3, 2, -1});
    const auto zs = inner.to_list<std::uint8_t>("z");
    for (std::size_t i = 0; i < tds.size(); ++i) {
      CHECK(equal(zs[i], tds[i].get<std::uint8_t>({"inner", "z"})));
      CHECK(equal(r.to_list<std::int32_t>("y")[i], tds[i].get<std::int32_t>("y")));
      CHECK((r.element(static_cast<index_t>(i)) == tds[i]).all());
    }
    const PaddedBatch<std::int32_t> y = r.to_padded<std::int32_t>("y");
    CHECK(y.data().shape() == Shape{3, 2, 3, 4});
    const PackedBatch<std::int32_t> yp = r.to_packed<std::int32_t>("y");
    CHECK(yp.data().shape() == Shape{14, 4});
    TBATCH_CHECK_THROWS_WITH(r.get_dict("x"), TypeError,
                             "RaggedTensorDict::get_dict: entry 'x' is a tensor, not a nested "
                             "RaggedTensorDict");
    TBATCH_CHECK_THROWS_WITH(r.is_ragged("inner"), TypeError,
                             "RaggedTensorDict::is_ragged: entry 'inner' is a nested "
                             "RaggedTensorDict, not a tensor; use get_dict");
  }
}

TEMPLATE_TEST_CASE("stack_ragged round-trips every dtype", "[tensor_dict][ragged][dtypes]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::vector<TensorDict> tds;
  for (index_t n : {2, 0, 3})
    tds.push_back(TensorDict({{"v", iota<T>(Shape{n, 3}, 5)}}, {n}));
  for (RaggedLayout layout : {RaggedLayout::padded, RaggedLayout::packed}) {
    const RaggedTensorDict r = TensorDict::stack_ragged(tds, layout);
    CHECK(r.batch_size() == std::vector<index_t>{3, -1});
    const PaddedBatch<T> padded = r.to_padded<T>("v");
    const PackedBatch<T> packed = r.to_packed<T>("v");
    CHECK(padded.data().shape() == Shape{3, 3, 3});
    CHECK(packed.data().shape() == Shape{5, 3});
    for (index_t i = 0; i < 3; ++i) {
      CHECK(equal(padded.element(i), tds[i].get<T>("v")));
      CHECK(equal(packed.element(i), tds[i].get<T>("v")));
      CHECK(equal(r.element(i).get<T>("v"), tds[i].get<T>("v")));
    }
    CHECK(equal(padded.data().index({1}), Tensor<T>(Shape{3, 3})));
  }
}

TEST_CASE("random stack_ragged matches a plain loop", "[tensor_dict][ragged][random]") {
  std::mt19937 rng(12);
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 30; ++trial) {
    const index_t count = pick(1, 4);
    std::vector<TensorDict> tds;
    for (index_t i = 0; i < count; ++i) {
      const Shape batch{pick(0, 3), pick(1, 3)};
      tds.push_back(TensorDict({{"a", random_tensor<std::int64_t>(shape_with(batch, {2}), rng)},
                                {"b", random_tensor<std::int8_t>(batch, rng)}},
                               batch));
    }
    const RaggedTensorDict r =
        TensorDict::stack_ragged(tds, pick(0, 1) ? RaggedLayout::packed : RaggedLayout::padded);
    INFO("trial " << trial);
    for (index_t d = 0; d < 2; ++d) {
      bool same = true;
      for (const TensorDict& td : tds)
        same = same && td.batch_size()[d] == tds[0].batch_size()[d];
      CHECK(r.batch_size()[d + 1] == (same ? tds[0].batch_size()[d] : -1));
    }
    const PaddedBatch<std::int64_t> padded = r.to_padded<std::int64_t>("a", std::int64_t(-5));
    for (index_t i = 0; i < count; ++i) {
      const Tensor<std::int64_t> source = tds[i].get<std::int64_t>("a");
      const Tensor<std::int64_t> slot = padded.data().select(0, i);
      for_each_index(slot.shape(), [&](const std::vector<index_t>& idx) {
        const bool inside = idx[0] < source.size(0) && idx[1] < source.size(1);
        CHECK(element_at(slot, idx) == (inside ? element_at(source, idx) : std::int64_t(-5)));
      });
    }
    // Packed data holds the elements one after the other in row-major order (with a unit
    // last dim when the last dims differ).
    const PackedBatch<std::int8_t> packed = r.to_packed<std::int8_t>("b");
    const index_t last = packed.data().size(1);
    index_t k = 0;
    for (index_t i = 0; i < count; ++i) {
      const Tensor<std::int8_t> source = tds[i].get<std::int8_t>("b");
      for_each_index(source.shape(), [&](const std::vector<index_t>& idx) {
        CHECK(element_at(packed.data(), {k / last, k % last}) == element_at(source, idx));
        ++k;
      });
      CHECK(equal(r.to_list<std::int8_t>("b")[i], source));
    }
    CHECK(k == packed.data().numel());
  }
}

TEST_CASE("stack_ragged errors", "[tensor_dict][ragged][errors]") {
  const TensorDict a({{"x", Tensor<float>(Shape{2, 3})}}, {2});
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack_ragged({}), ValueError,
                           "TensorDict::stack_ragged: expected a non-empty list of TensorDicts");
  TBATCH_CHECK_THROWS_WITH(
      TensorDict::stack_ragged({a, TensorDict({{"x", Tensor<float>(Shape{2, 3})}})}), ShapeError,
      "TensorDict::stack_ragged: tds[1] has batch_size [] but tds[0] has [2]; "
      "stacking needs the same number of batch dims");
  TBATCH_CHECK_THROWS_WITH(
      TensorDict::stack_ragged({a, TensorDict({{"q", Tensor<float>(Shape{4})}}, {4})}), KeyError,
      "TensorDict::stack_ragged: got keys ['x'] and ['q'] which are "
      "incompatible (tds[0] and tds[1]); every TensorDict must have the same "
      "keys");
  TBATCH_CHECK_THROWS_WITH(
      TensorDict::stack_ragged({a, TensorDict({{"x", Tensor<double>(Shape{4, 3})}}, {4})}),
      TypeError, "entry 'x' has dtype float64 in tds[1] but float32 in tds[0]");
  TBATCH_CHECK_THROWS_WITH(
      TensorDict::stack_ragged({a, TensorDict({{"x", Tensor<float>(Shape{4, 3, 1})}}, {4})}),
      ShapeError,
      "entry 'x' has shape [4, 3, 1] in tds[1] but [2, 3] in tds[0]; a ragged entry needs one "
      "rank in every TensorDict");
  TBATCH_CHECK_THROWS_WITH(
      TensorDict::stack_ragged({a, TensorDict({{"x", TensorDict(Shape{4})}}, {4})}), TypeError,
      "entry 'x' is a tensor in tds[0] but a nested TensorDict in tds[1]");
  const RaggedTensorDict scalars =
      TensorDict::stack_ragged({TensorDict({{"s", Tensor<float>(Shape{}, 1.f)}}),
                                TensorDict({{"s", Tensor<float>(Shape{})}})});
  CHECK(scalars.batch_size() == std::vector<index_t>{2});
  CHECK(equal(scalars.get<float>("s"), Tensor<float>(Shape{2}, std::vector<float>{1, 0})));
  TBATCH_CHECK_THROWS_WITH(scalars.to_padded<float>("s"), ShapeError,
                           "RaggedTensorDict::to_padded: entry 's' holds 0-d tensors (stacked "
                           "shape [2]); padded and packed batches need elements of rank >= 1");
  TBATCH_CHECK_THROWS_WITH(scalars.to_packed<float>("s"), ShapeError,
                           "RaggedTensorDict::to_packed: entry 's' holds 0-d tensors");
  const TensorDict n1({{"n", TensorDict({{"v", Tensor<float>(Shape{2, 1})}}, {2, 1})}}, {2});
  const TensorDict n2({{"n", TensorDict({{"v", Tensor<float>(Shape{3})}}, {3})}}, {3});
  TBATCH_CHECK_THROWS_WITH(TensorDict::stack_ragged({n1, n2}), ShapeError,
                           "tds[1] has batch_size [3] but tds[0] has [2, 1] at 'n'");
}
