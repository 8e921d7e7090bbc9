// The aliasing rule of view/aliasing.hpp (docs/reliability.md, "Aliasing"): the element-level
// tests against a brute-force list of addresses, and every kind of writer on outputs that hold
// an address twice and on inputs that share elements with their output. Also the locked
// TensorDict's key set, empty and zero-width batches, and the buffer cache at exit.
#include <algorithm>
#include <random>
#include <set>

#include "test_support.hpp"

using namespace tbatch;

namespace {

/// Offsets of every element of `l`, by a plain odometer over its index space.
std::vector<index_t> offsets_by_loop(const Layout& l) {
  std::vector<index_t> out;
  if (l.shape.numel() == 0) return out;
  std::vector<index_t> at(l.shape.size(), 0);
  while (true) {
    index_t offset = l.offset;
    for (std::size_t d = 0; d < at.size(); ++d)
      offset += at[d] * l.strides[d];
    out.push_back(offset);
    std::size_t d = at.size();
    while (d > 0 && ++at[d - 1] == l.shape[d - 1])
      at[--d] = 0;
    if (d == 0) return out;
  }
}

/// A random layout of rank 1-3 inside a buffer of `capacity` elements (strides may be zero,
/// negative or overlapping).
Layout random_layout(std::mt19937& rng, index_t capacity) {
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  while (true) {
    Layout l;
    const index_t rank = pick(1, 3);
    for (index_t d = 0; d < rank; ++d) {
      l.shape.push_back(pick(1, 4));
      l.strides.push_back(pick(-6, 6));
    }
    l.offset = pick(0, capacity - 1);
    const layout::Extent e = layout::extent(l, "test");
    if (e.lowest >= 0 && e.highest < capacity) return l;
  }
}

}  // namespace

TEST_CASE("repeats_elements and may_share_elements agree with a list of addresses", "[aliasing]") {
  std::mt19937 rng(7);
  std::vector<float> buffer(64);
  for (int trial = 0; trial < 4000; ++trial) {
    const Layout a = random_layout(rng, 64), b = random_layout(rng, 64);
    const std::vector<index_t> in_a = offsets_by_loop(a), in_b = offsets_by_loop(b);
    const std::set<index_t> set_a(in_a.begin(), in_a.end()), set_b(in_b.begin(), in_b.end());
    bool shared = false;
    for (index_t o : set_b)
      shared = shared || set_a.count(o) > 0;
    INFO("trial " << trial << ": a " << a.shape << " strides " << detail::listed(a.strides)
                  << " offset " << a.offset << ", b " << b.shape << " strides "
                  << detail::listed(b.strides) << " offset " << b.offset);
    CHECK(detail::repeats_elements(a) == (set_a.size() != in_a.size()));
    CHECK(detail::may_share_elements(StridedView<float>(buffer.data(), a),
                                     StridedView<float>(buffer.data(), b)) == shared);
  }
}

TEST_CASE("may_share_elements decides interleaved views on elements", "[aliasing]") {
  Tensor<float> t(Shape{4, 10});
  const Tensor<float> even = t.slice(1, 0, std::nullopt, 2), odd = t.slice(1, 1, std::nullopt, 2);
  CHECK_FALSE(detail::may_share_elements(even.view(), odd.view()));
  CHECK(detail::may_share_elements(even.view(), t.view()));
  // Views of other element sizes over one buffer overlap on bytes: counted as shared.
  const StridedView<const double> doubles(reinterpret_cast<const double*>(t.data()), Shape{2});
  CHECK(detail::may_share_elements(doubles, t.view()));
  CHECK_FALSE(detail::may_share_elements(t.narrow(0, 0, 0).view(), t.view()));
}

TEST_CASE("pad_into reads an input that shares elements with out as it was", "[aliasing][pad]") {
  // The even columns padded into the odd columns: no element in common, no copy, no error.
  Tensor<float> t = testing::iota<float>(Shape{3, 8});
  const Tensor<float> before = t.clone();
  pad_into(t.slice(1, 0, std::nullopt, 2).narrow(0, 0, 1).view(), {0, 0, 1, 1},
           t.slice(1, 1, std::nullopt, 2).view(), PadMode::constant, -1.f);
  for (index_t c = 0; c < 4; ++c) {
    CHECK(t(0, 2 * c + 1) == -1.f);
    CHECK(t(1, 2 * c + 1) == before(0, 2 * c));
    CHECK(t(2, 2 * c + 1) == -1.f);
    CHECK(t(1, 2 * c) == before(1, 2 * c));
  }
  // x overlapping out: the result is pad of x as it was before the call.
  Tensor<float> u = testing::iota<float>(Shape{6});
  const Tensor<float> expected = pad(u.narrow(0, 0, 4), {1, 1}, PadMode::reflect);
  pad_into(u.narrow(0, 0, 4).view(), {1, 1}, u.view(), PadMode::reflect);
  CHECK(equal(u, expected));
}

TEST_CASE("space_to_batch_nd_into and batch_to_space_nd_into stage an aliased input",
          "[aliasing][space_to_batch]") {
  Tensor<float> t = testing::iota<float>(Shape{1, 4, 1});
  const Tensor<float> expected = space_to_batch_nd(t, {2}, {{0, 0}});
  space_to_batch_nd_into(t.view(), {2}, {{0, 0}}, t.reshape({2, 2, 1}).view());
  CHECK(equal(t.reshape({2, 2, 1}), expected));
  const Tensor<float> back = batch_to_space_nd(t.reshape({2, 2, 1}), {2}, {{0, 0}});
  batch_to_space_nd_into(t.reshape({2, 2, 1}).view(), {2}, {{0, 0}}, t.view());
  CHECK(equal(t, back));
}

TEST_CASE("list_to_padded_into and list_to_packed_into re-order a batch in its own buffer",
          "[aliasing][batch]") {
  const PaddedBatch<float> pb = list_to_padded(
      std::vector<Tensor<float>>{Tensor<float>({2, 1}, {1, 2}), Tensor<float>({3, 1}, {3, 4, 5})},
      -1.f);
  const std::vector<Tensor<float>> v = pb.to_list();
  list_to_padded_into({v[1], v[0]}, -1.f, pb.data());
  CHECK(equal(pb.data().reshape({6}), Tensor<float>({6}, {3, 4, 5, 1, 2, -1})));

  const PackedBatch<float> packed = list_to_packed(
      std::vector<Tensor<float>>{Tensor<float>({2, 1}, {1, 2}), Tensor<float>({3, 1}, {3, 4, 5})});
  const std::vector<Tensor<float>> w = packed.to_list();
  list_to_packed_into({w[1], w[0]}, packed.data());
  CHECK(equal(packed.data().reshape({5}), Tensor<float>({5}, {3, 4, 5, 1, 2})));

  // Randomised: any permutation of a padded batch's elements into its own data.
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Tensor<float>> list;
    for (int i = 0; i < 5; ++i)
      list.push_back(testing::random_tensor<float>(
          Shape{std::uniform_int_distribution<index_t>(0, 4)(rng), 3}, rng));
    const PaddedBatch<float> batch = list_to_padded(list, 0.f);
    std::vector<Tensor<float>> views = batch.to_list(), copies;
    std::shuffle(views.begin(), views.end(), rng);
    for (const Tensor<float>& e : views)
      copies.push_back(e.clone());
    const PaddedBatch<float> expected =
        list_to_padded(copies, 0.f, std::vector<index_t>(batch.max_shape()));
    list_to_padded_into(views, 0.f, batch.data());
    CHECK(equal(batch.data(), expected.data()));
  }
}

TEST_CASE("every writer rejects an output that holds an address twice", "[aliasing][errors]") {
  const Tensor<float> one = Tensor<float>(Shape{1, 3}, 1.f);
  Tensor<float> expanded = Tensor<float>(Shape{1, 3}).expand({3, 3});
  Tensor<float> windows = Tensor<float>(Shape{5}).unfold(0, 3, 1);  // (3, 3), rows overlap
  const char* message = "several of its elements at one address";
  TBATCH_CHECK_THROWS_WITH(expanded.index_put({1}, one.reshape({3})), ValueError,
                           "index_put: the tensor has shape [3, 3] and strides [0, 1]");
  TBATCH_CHECK_THROWS_WITH(expanded.index_put({Slice{}}, Tensor<float>(Shape{3, 3})), ValueError,
                           message);
  TBATCH_CHECK_THROWS_WITH(windows.index_fill({0}, 2.f), ValueError, message);
  TBATCH_CHECK_THROWS_WITH(fill(windows.view(), 1.f), ValueError, "fill: dst has shape [3, 3]");
  TBATCH_CHECK_THROWS_WITH(copy(Tensor<float>(Shape{3, 3}).view(), expanded.view()), ValueError,
                           "copy: dst");
  TBATCH_CHECK_THROWS_WITH(
      pad_into(Tensor<float>(Shape{1, 1}).view(), {1, 1, 1, 1}, expanded.view()), ValueError,
      "pad_into: out");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd_into(Tensor<float>(Shape{1, 6}).view(), {2}, {{0, 0}},
                                                  Tensor<float>(Shape{1, 3}).expand({2, 3}).view()),
                           ValueError, "space_to_batch_nd_into: out");
  TBATCH_CHECK_THROWS_WITH(
      batch_to_space_nd_into(Tensor<float>(Shape{9, 1}).view(), {3}, {{0, 0}}, windows.view()),
      ValueError, "batch_to_space_nd_into: out");
  const std::vector<Tensor<float>> list{Tensor<float>(Shape{3}), Tensor<float>(Shape{3})};
  TBATCH_CHECK_THROWS_WITH(list_to_packed_into(list, Tensor<float>(Shape{3}).expand({2, 3})),
                           ValueError, "list_to_packed_into: out");
  TBATCH_CHECK_THROWS_WITH(list_to_padded_into(std::vector<Tensor<float>>{one, one}, 0.f,
                                               Tensor<float>(Shape{1, 3}).expand({2, 1, 3})),
                           ValueError, "list_to_padded_into: out");
  TBATCH_CHECK_THROWS_WITH(index_add_(windows, 0, Tensor<index_t>({1}, {0}), one), ValueError,
                           "index_add_: self");
  TBATCH_CHECK_THROWS_WITH(
      scatter_(windows, Tensor<index_t>({1}, {0}), Tensor<float>(Shape{1, 3}), true), ValueError,
      "scatter_: x");

  TensorDict td({{"a", Tensor<float>(Shape{1, 2})}}, {1});
  TensorDict wide = td.expand({3});
  TBATCH_CHECK_THROWS_WITH(wide.index_put({1}, 5.0), ValueError,
                           "TensorDict::index_put: entry 'a' has shape [3, 2] and strides [0, 1]");
  TBATCH_CHECK_THROWS_WITH(wide.index_put({1}, TensorDict({{"a", Tensor<float>(Shape{2})}})),
                           ValueError, "entry 'a'");
  CHECK(equal(td.get<float>("a"), Tensor<float>(Shape{1, 2})));
}

TEST_CASE("TensorDict::index_put reads values that view the dict as they were",
          "[aliasing][tensor_dict]") {
  TensorDict td(
      {{"a", testing::iota<float>(Shape{2, 3})}, {"b", testing::iota<float>(Shape{2, 3})}}, {2});
  // The value's "b" is row 0 of td's "a": written after "a" is, it must still be read as it was.
  const TensorDict value(
      {{"a", Tensor<float>(Shape{3}, 9.f)}, {"b", td.get<float>("a").select(0, 0)}});
  const Tensor<float> b_expected = td.get<float>("a").select(0, 0).clone();
  td.index_put({0}, value);
  CHECK(equal(td.get<float>("a").select(0, 0), Tensor<float>(Shape{3}, 9.f)));
  CHECK(equal(td.get<float>("b").select(0, 0), b_expected));
}

TEST_CASE("a locked TensorDict keeps its key set, nested keys included", "[tensor_dict][keys]") {
  TensorDict td(
      {{"a", Tensor<float>(Shape{2})}, {"n", TensorDict({{"x", Tensor<float>(Shape{2})}}, {2})}},
      {2});
  td.lock_();
  TBATCH_CHECK_THROWS_WITH(td.set("n", TensorDict({{"y", Tensor<float>(Shape{2})}}, {2})), KeyError,
                           "TensorDict::set: cannot replace the nested TensorDict at key 'n' "
                           "(keys ['x']) with one of other keys (['y'])");
  TBATCH_CHECK_THROWS_WITH(td.set("a", TensorDict({{"x", Tensor<float>(Shape{2})}}, {2})), KeyError,
                           "cannot replace the tensor at key 'a' with a TensorDict");
  TBATCH_CHECK_THROWS_WITH(td.set("n", Tensor<float>(Shape{2})), KeyError,
                           "cannot replace the nested TensorDict at key 'n' with a tensor");
  TBATCH_CHECK_THROWS_WITH(
      td.update(TensorDict({{"a", TensorDict({{"z", Tensor<float>(Shape{2})}}, {2})}}, {2})),
      KeyError, "TensorDict::update: cannot replace the tensor at key 'a'");
  CHECK(td.keys(true).size() == 3);
  // The same keys (other values) are allowed, and the new nested dict is locked too.
  td.set("n", TensorDict({{"x", Tensor<double>(Shape{2})}}, {2}));
  CHECK(td.get_dict("n").is_locked());
  CHECK(td.get_any({"n", "x"}).dtype() == DType::float64);
}

TEST_CASE("zero-width and empty batches keep their element rank and last dim", "[batch]") {
  const ExactBatch<float> exact(Tensor<float>(Shape{3, 2, 0}));
  const PackedBatch<float> packed = to_packed(exact);
  CHECK(packed.data().shape() == Shape{6, 0});
  CHECK(equal(packed.first_idx(), Tensor<index_t>({4}, {0, 2, 4, 6})));
  CHECK(to_exact(packed).data().shape() == Shape{3, 2, 0});

  auto identity = [](const Tensor<float>& e) { return e; };
  const PackedBatch<float> no_elements =
      to_packed(ExactBatch<float>(Tensor<float>(Shape{0, 2, 4})));
  CHECK(no_elements.data().shape() == Shape{0, 4});
  const PackedBatch<float> mapped = map_elements(no_elements, identity);
  CHECK(mapped.batch_size() == 0);
  CHECK(mapped.element_rank() == 2);
  CHECK(mapped.last_dim() == 4);
  const PaddedBatch<float> padded = map_elements(to_padded(no_elements, 0.f), identity);
  CHECK(padded.element_rank() == 2);
  CHECK(padded.last_dim() == 4);
  const ExactBatch<float> exact_mapped =
      map_elements(ExactBatch<float>(Tensor<float>(Shape{0, 5, 2})), identity);
  CHECK(exact_mapped.data().shape() == Shape{0, 5, 2});
}

namespace {
// Destroyed after main returns, possibly after other statics: its 4 MiB buffer goes back to the
// buffer cache during static destruction, which must still be there (ASan checks).
std::vector<Tensor<float>> kept_until_exit;
}  // namespace

TEST_CASE("a tensor freed during static destruction finds the buffer cache", "[core]") {
  kept_until_exit.push_back(Tensor<float>(Shape{1024, 1024}, 1.f));
  CHECK(kept_until_exit.back().numel() == 1024 * 1024);
}
