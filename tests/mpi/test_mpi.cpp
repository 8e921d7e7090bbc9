// Tests of tbatch/mpi.hpp, run by ctest under mpiexec with 2, 3 and 4 ranks (mpi.np2 to np4).
// Every rank's batch is generated from a seed and its rank, so each rank regenerates every other
// rank's batch and checks the collective's result against the concatenation computed locally.
// Error cases check that every rank throws the same tbatch::Error and that the ranks are still
// in step afterwards (a follow-up collective succeeds).

#define CATCH_CONFIG_RUNNER
#include "../test_support.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <tbatch/mpi.hpp>

using namespace tbatch;
using tbatch::testing::random_tensor;
using tbatch::testing::value_of;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {  // the mismatch cases need a rank 1
    std::fprintf(stderr, "test_mpi needs at least 2 ranks: mpiexec -n 2 %s\n", argv[0]);
    MPI_Finalize();
    return 1;
  }
  const int result = Catch::Session().run(argc, argv);
  MPI_Finalize();
  return result;
}

namespace {

const MPI_Comm world = MPI_COMM_WORLD;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  return rank;
}
int world_size() {
  int size = 0;
  MPI_Comm_size(world, &size);
  return size;
}

// Rank r's elements in scenario `seed`: 0 to max_batch elements (so some ranks are empty) of
// rank `element_rank`, sizes 0 to 4 (so some elements have no rows), random values.
template <class T>
std::vector<Tensor<T>> rank_list(unsigned seed, int r, index_t element_rank, index_t last_dim,
                                 index_t max_batch = 4) {
  std::mt19937 rng(seed * 7919u + static_cast<unsigned>(r));
  const index_t batch = std::uniform_int_distribution<index_t>(0, max_batch)(rng);
  std::vector<Tensor<T>> list;
  for (index_t i = 0; i < batch; ++i) {
    Shape shape = tbatch::testing::random_shape(rng, element_rank - 1, 0, 4);
    shape.push_back(last_dim);
    list.push_back(random_tensor<T>(shape, rng));
  }
  return list;
}

// The elements of ranks 0 .. ranks-1 in rank order.
template <class T>
std::vector<Tensor<T>> concatenation(const std::vector<int>& ranks, unsigned seed,
                                     index_t element_rank, index_t last_dim) {
  std::vector<Tensor<T>> all;
  for (int r : ranks)
    for (Tensor<T>& t : rank_list<T>(seed, r, element_rank, last_dim))
      all.push_back(t);
  return all;
}
std::vector<int> all_ranks() {
  std::vector<int> ranks;
  for (int r = 0; r < world_size(); ++r)
    ranks.push_back(r);
  return ranks;
}

template <class T>
void check_same(const PackedBatch<T>& got, const PackedBatch<T>& expected) {
  CHECK(got.batch_size() == expected.batch_size());
  CHECK(got.element_rank() == expected.element_rank());
  CHECK(got.last_dim() == expected.last_dim());
  CHECK(equal(got.data(), expected.data()));
  CHECK(equal(got.shape_per_tensor(), expected.shape_per_tensor()));
  CHECK(equal(got.first_idx(), expected.first_idx()));
}

// The packed batch with its data in a strided (non-contiguous) view of a wider tensor.
template <class T>
PackedBatch<T> strided_copy(const PackedBatch<T>& batch) {
  Tensor<T> wide(Shape{batch.data().size(0), batch.last_dim() + 2}, value_of<T>(55));
  Tensor<T> inner = wide.narrow(1, 1, batch.last_dim());
  copy(batch.data().view(), inner.view());
  return PackedBatch<T>(inner, batch.shape_per_tensor(), batch.first_idx());
}

// After an error every rank must still be in step: a small allgather gives 0, 1, ..., size-1.
void check_still_in_step() {
  const PackedBatch<std::int32_t> mine = list_to_packed(
      std::vector<Tensor<std::int32_t>>{Tensor<std::int32_t>(Shape{1}, world_rank())});
  const PackedBatch<std::int32_t> all = mpi::allgather(world, mine);
  CHECK(all.data().to_vector() == Tensor<std::int32_t>::arange(world_size()).to_vector());
}

// A packed batch of one element of `rows` rows of width `last_dim` that allocates one value:
// the data is a stride-0 expansion, so counts above INT_MAX can be tried without the memory.
PackedBatch<std::int8_t> huge_batch(index_t rows, index_t last_dim = 1) {
  const Tensor<std::int8_t> data = Tensor<std::int8_t>(Shape{1, 1}).expand(Shape{rows, last_dim});
  return PackedBatch<std::int8_t>(data, Tensor<index_t>(Shape{1, 1}, rows),
                                  Tensor<index_t>(Shape{2}, std::vector<index_t>{0, rows}));
}

}  // namespace

TEMPLATE_TEST_CASE("datatype_of describes one element of T", "[mpi]", TBATCH_ALL_DTYPES) {
  const mpi::Datatype type = mpi::datatype_of<TestType>();
  int size = 0;
  REQUIRE(MPI_Type_size(type.get(), &size) == MPI_SUCCESS);
  CHECK(size == static_cast<int>(sizeof(TestType)));
  constexpr bool blob =
      std::is_same_v<TestType, Eigen::half> || std::is_same_v<TestType, Eigen::bfloat16>;
  CHECK(type.is_owned() == blob);
  // Round trip through a plain MPI_Allgather with that type: rank r sends value_of(r + 1).
  const TestType mine = value_of<TestType>(world_rank() + 1);
  Tensor<TestType> all(Shape{world_size()});
  REQUIRE(MPI_Allgather(&mine, 1, type.get(), all.data(), 1, type.get(), world) == MPI_SUCCESS);
  for (int r = 0; r < world_size(); ++r)
    CHECK(tbatch::detail::widen(all(r)) == tbatch::detail::widen(value_of<TestType>(r + 1)));
}

TEST_CASE("datatype_of uses the predefined types", "[mpi]") {
  CHECK(mpi::datatype_of<float>().get() == MPI_FLOAT);
  CHECK(mpi::datatype_of<double>().get() == MPI_DOUBLE);
  CHECK(mpi::datatype_of<std::int8_t>().get() == MPI_INT8_T);
  CHECK(mpi::datatype_of<std::int64_t>().get() == MPI_INT64_T);
  CHECK(mpi::datatype_of<std::uint32_t>().get() == MPI_UINT32_T);
  CHECK(mpi::datatype_of<bool>().get() == MPI_BYTE);
}

TEMPLATE_TEST_CASE("allgather of ragged packed batches is the concatenation in rank order", "[mpi]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  for (index_t element_rank = 1; element_rank <= 3; ++element_rank)
    for (unsigned seed = 0; seed < 6; ++seed) {
      CAPTURE(element_rank, seed);
      const PackedBatch<T> local =
          list_to_packed(rank_list<T>(seed, world_rank(), element_rank, 3));
      const PackedBatch<T> expected =
          list_to_packed(concatenation<T>(all_ranks(), seed, element_rank, 3));
      check_same(mpi::allgather(world, local), expected);
      // Strided local data is copied into place just the same.
      check_same(mpi::allgather(world, strided_copy(local)), expected);
    }
}

TEMPLATE_TEST_CASE("gather collects the concatenation on root only", "[mpi]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  for (int root = 0; root < world_size(); ++root)
    for (unsigned seed = 10; seed < 13; ++seed) {
      CAPTURE(root, seed);
      const PackedBatch<T> local = list_to_packed(rank_list<T>(seed, world_rank(), 3, 2));
      const PackedBatch<T> expected = list_to_packed(concatenation<T>(all_ranks(), seed, 3, 2));
      const PackedBatch<T> got = mpi::gather(world, root, strided_copy(local));
      if (world_rank() == root) {
        check_same(got, expected);
      } else {
        CHECK(got.batch_size() == 0);
        CHECK(got.element_rank() == expected.element_rank());
        CHECK(got.last_dim() == expected.last_dim());
        CHECK(got.data().shape() == Shape{0, expected.last_dim()});
        CHECK(got.first_idx().to_vector() == std::vector<index_t>{0});
      }
    }
}

TEST_CASE("empty ranks contribute nothing and constrain nothing", "[mpi]") {
  const int me = world_rank();
  std::vector<Tensor<float>> mine;
  if (me != 1) mine.push_back(Tensor<float>(Shape{2, 2, 3}, static_cast<float>(me)));
  // Rank 1's empty batch has rank 1 and last dim 0 (list_to_packed of an empty list).
  const PackedBatch<float> got = mpi::allgather(world, list_to_packed(mine));
  CHECK(got.batch_size() == world_size() - 1);
  CHECK(got.element_rank() == 3);
  CHECK(got.last_dim() == 3);
  std::vector<Tensor<float>> expected;
  for (int r = 0; r < world_size(); ++r)
    if (r != 1) expected.push_back(Tensor<float>(Shape{2, 2, 3}, static_cast<float>(r)));
  check_same(got, list_to_packed(expected));

  SECTION("every rank empty: rank 0's element rank and last dim") {
    const Tensor<float> no_rows(Shape{0, me == 0 ? 5 : 7});
    const PackedBatch<float> empty(no_rows, Tensor<index_t>(Shape{0, me == 0 ? 1 : 2}),
                                   Tensor<index_t>(Shape{1}));
    const PackedBatch<float> all = mpi::allgather(world, empty);
    CHECK(all.batch_size() == 0);
    CHECK(all.element_rank() == 2);
    CHECK(all.last_dim() == 5);
  }
  SECTION("rank 0 empty: gather to it still collects the others") {
    std::vector<Tensor<float>> list;
    if (me != 0) list.push_back(Tensor<float>(Shape{me, 3}, 1.0f));
    const PackedBatch<float> on_root = mpi::gather(world, 0, list_to_packed(list));
    if (me == 0) {
      CHECK(on_root.batch_size() == world_size() - 1);
      CHECK(on_root.data().size(0) == world_size() * (world_size() - 1) / 2);
    }
  }
}

TEMPLATE_TEST_CASE("zero-length elements and zero-size last dims", "[mpi]", float, bool,
                   Eigen::half) {
  using T = TestType;
  const int me = world_rank();
  SECTION("elements with no rows") {
    // Every rank: an element of shape (0, 4, 3), one of (me + 1, 0, 3), one of (1, 1, 3).
    auto list_of = [](int r) {
      std::mt19937 rng(static_cast<unsigned>(r));
      return std::vector<Tensor<T>>{Tensor<T>(Shape{0, 4, 3}),
                                    random_tensor<T>(Shape{r + 1, 0, 3}, rng),
                                    random_tensor<T>(Shape{1, 1, 3}, rng)};
    };
    std::vector<Tensor<T>> expected;
    for (int r = 0; r < world_size(); ++r)
      for (const Tensor<T>& t : list_of(r))
        expected.push_back(t);
    check_same(mpi::allgather(world, list_to_packed(list_of(me))), list_to_packed(expected));
  }
  SECTION("last dim 0") {
    std::vector<Tensor<T>> mine{Tensor<T>(Shape{me + 2, 0}), Tensor<T>(Shape{1, 0})};
    std::vector<Tensor<T>> expected;
    for (int r = 0; r < world_size(); ++r) {
      expected.push_back(Tensor<T>(Shape{r + 2, 0}));
      expected.push_back(Tensor<T>(Shape{1, 0}));
    }
    const PackedBatch<T> got = mpi::allgather(world, list_to_packed(mine));
    check_same(got, list_to_packed(expected));
    CHECK(got.shape_of(2) == Shape{3, 0});
  }
}

TEMPLATE_TEST_CASE("allgather of padded batches re-pads to the global maximum shape", "[mpi]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  const T pad = value_of<T>(101);
  for (unsigned seed = 20; seed < 26; ++seed) {
    CAPTURE(seed);
    const std::vector<Tensor<T>> mine = rank_list<T>(seed, world_rank(), 3, 2);
    const std::vector<Tensor<T>> all = concatenation<T>(all_ranks(), seed, 3, 2);
    // Each rank pads to its own maximum; the result is padded to the maximum over all ranks.
    const PaddedBatch<T> got = mpi::allgather(world, list_to_padded(mine, pad), pad);
    const PaddedBatch<T> expected = list_to_padded(all, pad);
    CHECK(equal(got.data(), expected.data()));
    CHECK(equal(got.shape_per_tensor(), expected.shape_per_tensor()));
    // A rank that padded past its elements (here rank 0, to 6 x 5) sets the global maximum.
    const PaddedBatch<T> local_wide =
        world_rank() == 0 ? list_to_padded(mine, pad, {6, 5}) : list_to_padded(mine, pad);
    const PaddedBatch<T> wide = mpi::allgather(world, local_wide, pad);
    CHECK(wide.max_shape() == Shape{6, 5});
    CHECK(equal(wide.data(), list_to_padded(all, pad, {6, 5}).data()));
  }
}

TEST_CASE("padded allgather fills with the padding value and keeps the mask", "[mpi]") {
  const int me = world_rank();
  // Rank r holds one element of shape (r + 1, 2) filled with r.
  const PaddedBatch<std::int16_t> mine =
      list_to_padded(std::vector<Tensor<std::int16_t>>{Tensor<std::int16_t>(
                         Shape{me + 1, 2}, static_cast<std::int16_t>(me))},
                     std::int16_t(0));
  const PaddedBatch<std::int16_t> all = mpi::allgather(world, mine, std::int16_t(-1));
  const index_t n = world_size();
  REQUIRE(all.data().shape() == Shape{n, n, 2});
  for (index_t r = 0; r < n; ++r)
    for (index_t row = 0; row < n; ++row)
      for (index_t c = 0; c < 2; ++c)
        CHECK(all.data()(r, row, c) == (row <= r ? r : -1));
  const std::vector<bool> mask = all.mask().to_vector();
  CHECK(std::count(mask.begin(), mask.end(), true) == n * (n + 1) / 2);
}

TEMPLATE_TEST_CASE("scatter_balanced gives each rank a contiguous share balanced by rows", "[mpi]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  const int me = world_rank(), size = world_size();
  for (int root = 0; root < size; ++root)
    for (unsigned seed = 30; seed < 34; ++seed) {
      CAPTURE(root, seed);
      // The root holds up to 40 elements of rank 2 and 3 columns (rows 0 to 4 each).
      const std::vector<Tensor<T>> list = rank_list<T>(seed, 0, 2, 3, 40);
      const PackedBatch<T> source =
          me == root ? list_to_packed(list) : list_to_packed(std::vector<Tensor<T>>{});
      const PackedBatch<T> share = mpi::scatter_balanced(world, root, source);
      CHECK(share.element_rank() == 2);
      CHECK(share.last_dim() == 3);
      // Where each share starts, from every rank's element and row counts (plain MPI).
      const index_t counts[2] = {share.batch_size(), share.data().size(0)};
      std::vector<index_t> all(2 * static_cast<std::size_t>(size));
      REQUIRE(MPI_Allgather(counts, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, world) ==
              MPI_SUCCESS);
      index_t start = 0, elements = 0, total_rows = 0, max_rows = 0;
      for (int r = 0; r < size; ++r) {
        if (r < me) start += all[2 * r];
        elements += all[2 * r];
      }
      for (const Tensor<T>& t : list) {
        total_rows += t.size(0);
        max_rows = std::max(max_rows, t.size(0));
      }
      CHECK(elements == static_cast<index_t>(list.size()));
      // My share is the original elements [start, start + count), in order.
      REQUIRE(start + share.batch_size() <= static_cast<index_t>(list.size()));
      std::vector<Tensor<T>> slice(list.begin() + start, list.begin() + start + share.batch_size());
      if (!slice.empty()) check_same(share, list_to_packed(slice));
      // Balanced by rows: every share is within one element's rows of total / size.
      for (int r = 0; r < size; ++r) {
        CAPTURE(r, all[2 * r + 1], total_rows, max_rows);
        CHECK(std::abs(all[2 * r + 1] * size - total_rows) <= max_rows * size);
      }
    }
}

TEST_CASE("scatter_balanced balances rows, not element counts", "[mpi]") {
  const int me = world_rank(), size = world_size();
  // Rows 5, 1, 1, 1, 1, 1: two ranks get 1 and 5 elements (5 rows each); three ranks get
  // 1, 2 and 3 elements (5, 2 and 3 rows: the splits nearest to 10/3 and 20/3 rows).
  std::vector<Tensor<double>> list{Tensor<double>(Shape{5, 2}, 1.0)};
  for (int i = 0; i < 5; ++i)
    list.push_back(Tensor<double>(Shape{1, 2}, 2.0 + i));
  const PackedBatch<double> source =
      me == 0 ? list_to_packed(list) : list_to_packed(std::vector<Tensor<double>>{});
  const PackedBatch<double> share = mpi::scatter_balanced(world, 0, source);
  const std::vector<index_t> golden2{1, 5}, golden3{1, 2, 3};
  if (size == 2) CHECK(share.batch_size() == golden2[me]);
  if (size == 3) CHECK(share.batch_size() == golden3[me]);

  SECTION("elements without rows are split by count") {
    // Seven elements of shape (0, 3): 4 and 3 on two ranks, 2, 3 and 2 on three.
    const std::vector<Tensor<double>> empties(7, Tensor<double>(Shape{0, 3}));
    const PackedBatch<double> all_empty =
        mpi::scatter_balanced(world, size - 1, me == size - 1 ? list_to_packed(empties) : source);
    const std::vector<index_t> by_count2{4, 3}, by_count3{2, 3, 2};
    if (size == 2) CHECK(all_empty.batch_size() == by_count2[me]);
    if (size == 3) CHECK(all_empty.batch_size() == by_count3[me]);
    CHECK(std::abs(all_empty.batch_size() * size - 7) <= size);
  }
  SECTION("an empty root batch gives every rank an empty batch of its shape") {
    const PackedBatch<double> none(Tensor<double>(Shape{0, 4}), Tensor<index_t>(Shape{0, 2}),
                                   Tensor<index_t>(Shape{1}));
    const PackedBatch<double> got = mpi::scatter_balanced(world, 0, me == 0 ? none : source);
    CHECK(got.batch_size() == 0);
    CHECK(got.element_rank() == 3);
    CHECK(got.last_dim() == 4);
  }
}

TEST_CASE("allgather works on any intracommunicator", "[mpi]") {
  const int me = world_rank();
  MPI_Comm half = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(world, me % 2, me, &half) == MPI_SUCCESS);
  std::vector<int> members;
  for (int r = me % 2; r < world_size(); r += 2)
    members.push_back(r);
  const PackedBatch<float> got =
      mpi::allgather(half, list_to_packed(rank_list<float>(40, me, 2, 4)));
  check_same(got, list_to_packed(concatenation<float>(members, 40, 2, 4)));
  MPI_Comm_free(&half);
}

TEST_CASE("mismatches between ranks are raised on every rank", "[mpi]") {
  const int me = world_rank(), size = world_size(), last = size - 1;
  auto floats = [](index_t rows, index_t last_dim) {
    return list_to_packed(std::vector<Tensor<float>>{Tensor<float>(Shape{rows, last_dim}, 1.0f)});
  };

  SECTION("last dim") {
    TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, floats(2, me == 1 ? 4 : 3)), ShapeError,
                             "mpi::allgather: rank 1 has last dim 4 but rank 0 has last dim 3; "
                             "every rank's elements must share the last dim");
    TBATCH_CHECK_THROWS_WITH(mpi::gather(world, 0, floats(2, me == 1 ? 4 : 3)), ShapeError,
                             "mpi::gather: rank 1 has last dim 4 but rank 0 has last dim 3");
    const std::vector<Tensor<float>> list{Tensor<float>(Shape{1, me == 1 ? 4 : 3})};
    TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, list_to_padded(list, 0.0f)), ShapeError,
                             "mpi::allgather: rank 1 has last dim 4 but rank 0 has last dim 3");
  }
  SECTION("element rank") {
    const PackedBatch<float> mine =
        me == last ? list_to_packed(std::vector<Tensor<float>>{Tensor<float>(Shape{1, 2, 3})})
                   : floats(2, 3);
    TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, mine), ShapeError,
                             tbatch::detail::concat("mpi::allgather: rank ", last,
                                                    " has elements of rank 3 but rank 0 has "
                                                    "elements of rank 2"));
  }
  SECTION("the first rank with elements is the reference") {
    std::vector<Tensor<float>> list;
    if (me >= 1) list.push_back(Tensor<float>(Shape{1, me == last && last > 1 ? 5 : 3}));
    if (size == 2) {
      CHECK(mpi::allgather(world, list_to_packed(list)).last_dim() == 3);
    } else {
      TBATCH_CHECK_THROWS_WITH(
          mpi::allgather(world, list_to_packed(list)), ShapeError,
          tbatch::detail::concat("rank ", last, " has last dim 5 but rank 1 has last dim 3"));
    }
  }
  SECTION("dtype") {
    const std::string message =
        "mpi::allgather: rank 1 has dtype int32 but rank 0 has dtype float32; every rank must "
        "use the same element type";
    if (me == 1) {
      const PackedBatch<std::int32_t> ints =
          list_to_packed(std::vector<Tensor<std::int32_t>>{Tensor<std::int32_t>(Shape{2, 3})});
      TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, ints), TypeError, message);
    } else {
      TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, floats(2, 3)), TypeError, message);
    }
  }
  SECTION("dtype of a scatter_balanced receiver") {
    const std::string message =
        "mpi::scatter_balanced: rank 1 has dtype float64 but rank 0 has "
        "dtype float32";
    if (me == 1) {
      TBATCH_CHECK_THROWS_WITH(
          mpi::scatter_balanced(world, 0, list_to_packed(std::vector<Tensor<double>>{})), TypeError,
          message);
    } else {
      TBATCH_CHECK_THROWS_WITH(mpi::scatter_balanced(world, 0, floats(2, 3)), TypeError, message);
    }
  }
  SECTION("different calls") {
    const std::string message =
        "rank 1 called allgather(PackedBatch) but rank 0 called gather; every rank of the "
        "communicator must make the same call";
    if (me == 0)
      TBATCH_CHECK_THROWS_WITH(mpi::gather(world, 0, floats(1, 3)), ValueError, message);
    else
      TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, floats(1, 3)), ValueError, message);
    const std::string padded =
        "rank 1 called allgather(PaddedBatch) but rank 0 called "
        "allgather(PackedBatch)";
    if (me == 1)
      TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, to_padded(floats(1, 3), 0.0f)), ValueError,
                               padded);
    else
      TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, floats(1, 3)), ValueError, padded);
  }
  SECTION("roots") {
    TBATCH_CHECK_THROWS_WITH(mpi::gather(world, me == 1 ? 1 : 0, floats(1, 3)), ValueError,
                             "mpi::gather: rank 1 passed root 1 but rank 0 passed root 0; every "
                             "rank must pass the same root");
    TBATCH_CHECK_THROWS_WITH(mpi::gather(world, size, floats(1, 3)), IndexError,
                             tbatch::detail::concat("mpi::gather: root ", size,
                                                    " is out of range for a communicator of ", size,
                                                    " ranks (expected 0 to ", last, ")"));
    TBATCH_CHECK_THROWS_WITH(mpi::scatter_balanced(world, -1, floats(1, 3)), IndexError,
                             "mpi::scatter_balanced: root -1 is out of range");
  }
  SECTION("row counts above INT_MAX") {
    const index_t too_many = index_t(INT_MAX) + 1;
    const std::string message =
        "rank 1 has 2147483648 rows to exchange but MPI counts are int (at most 2147483647)";
    const PackedBatch<std::int8_t> mine = huge_batch(me == 1 ? too_many : 3);
    TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, mine), ShapeError, "mpi::allgather: " + message);
    TBATCH_CHECK_THROWS_WITH(mpi::gather(world, 0, mine), ShapeError, "mpi::gather: " + message);
    // One element of 2^31 rows cannot be split: its rank's share is too large.
    TBATCH_CHECK_THROWS_WITH(mpi::scatter_balanced(world, 0, huge_batch(too_many)), ShapeError,
                             "rows to exchange but MPI counts are int");
  }
  SECTION("row offsets above INT_MAX") {
    if (size >= 3) {
      // 2^30 rows per rank: rank 2's rows would start at 2^31.
      TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, huge_batch(index_t(1) << 30)), ShapeError,
                               "mpi::allgather: rank 2's rows would start at offset 2147483648 "
                               "but MPI displacements are int (at most 2147483647)");
    }
  }
  SECTION("last dim above INT_MAX") {
    TBATCH_CHECK_THROWS_WITH(mpi::allgather(world, huge_batch(1, index_t(3) << 30)), ShapeError,
                             "mpi::allgather: the last dim 3221225472 exceeds MPI's int count "
                             "limit 2147483647");
  }
  SECTION("no communicator") {
    TBATCH_CHECK_THROWS_WITH(mpi::allgather(MPI_COMM_NULL, floats(1, 3)), ValueError,
                             "mpi::allgather: the communicator is MPI_COMM_NULL");
  }
  check_still_in_step();
}

// ---- all_to_all, rebalance, bucket_by_size ------------------------------------------------

namespace {

// Rank r's destinations in scenario `seed`: one random rank per element of rank_list.
std::vector<index_t> rank_destinations(unsigned seed, int r, index_t batch) {
  std::mt19937 rng(seed * 104729u + static_cast<unsigned>(r));
  std::vector<index_t> to;
  for (index_t i = 0; i < batch; ++i)
    to.push_back(std::uniform_int_distribution<index_t>(0, world_size() - 1)(rng));
  return to;
}

template <class T>
void check_elements(const PackedBatch<T>& got, const std::vector<Tensor<T>>& expected) {
  REQUIRE(got.batch_size() == static_cast<index_t>(expected.size()));
  for (index_t i = 0; i < got.batch_size(); ++i)
    CHECK(equal(got.element(i), expected[static_cast<std::size_t>(i)]));
}

// Row count of every element of every rank, in global order, and the elements themselves.
template <class T>
std::vector<Tensor<T>> global_elements(unsigned seed, index_t element_rank, index_t last_dim) {
  return concatenation<T>(all_ranks(), seed, element_rank, last_dim);
}
index_t rows_of_element(const Shape& shape) {
  index_t rows = 1;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d)
    rows *= shape[d];
  return rows;
}

}  // namespace

TEMPLATE_TEST_CASE("all_to_all sends each element to its destination rank", "[mpi]", float,
                   std::int8_t, double, bool) {
  using T = TestType;
  const int me = world_rank();
  for (unsigned seed = 1; seed <= 6; ++seed) {
    const index_t element_rank = 1 + seed % 3, last_dim = seed % 4;
    const std::vector<Tensor<T>> mine = rank_list<T>(seed, me, element_rank, last_dim, 6);
    const std::vector<index_t> to = rank_destinations(seed, me, index_t(mine.size()));
    std::vector<Tensor<T>> expected;
    for (int r = 0; r < world_size(); ++r) {
      const std::vector<Tensor<T>> theirs = rank_list<T>(seed, r, element_rank, last_dim, 6);
      const std::vector<index_t> their_to = rank_destinations(seed, r, index_t(theirs.size()));
      for (std::size_t i = 0; i < theirs.size(); ++i)
        if (their_to[i] == me) expected.push_back(theirs[i]);
    }
    INFO("seed " << seed << ", element rank " << element_rank << ", last dim " << last_dim);
    const Tensor<index_t> destination =
        Tensor<index_t>(Shape{index_t(to.size())}, std::vector<index_t>(to));
    const PackedBatch<T> got = mpi::all_to_all(world, list_to_packed(mine), destination);
    check_elements(got, expected);
    // The same from a strided batch, and in the padded form (re-padded to this rank's maximum).
    const PackedBatch<T> strided =
        mpi::all_to_all(world, strided_copy(list_to_packed(mine)), destination);
    check_elements(strided, expected);
    const PaddedBatch<T> padded = mpi::all_to_all(
        world, list_to_padded(mine, value_of<T>(0), std::vector<index_t>(element_rank - 1, 5)),
        destination, value_of<T>(1));
    REQUIRE(padded.batch_size() == index_t(expected.size()));
    for (index_t i = 0; i < padded.batch_size(); ++i)
      CHECK(equal(padded.element(i), expected[std::size_t(i)]));
  }
}

TEST_CASE("all_to_all to self, from empty ranks and of zero-row elements", "[mpi]") {
  const int me = world_rank();
  std::vector<Tensor<float>> mine{Tensor<float>(Shape{0, 2}), Tensor<float>(Shape{3, 2}, float(me)),
                                  Tensor<float>(Shape{0, 2})};
  const PackedBatch<float> local = list_to_packed(mine);
  const PackedBatch<float> same = mpi::all_to_all(world, local, Tensor<index_t>(Shape{3}, me));
  check_elements(same, mine);
  // Everything to rank 0; the other ranks receive nothing but keep the element rank and last dim.
  const PackedBatch<float> to_zero =
      mpi::all_to_all(world, me == 1 ? list_to_packed(std::vector<Tensor<float>>{}) : local,
                      Tensor<index_t>(Shape{me == 1 ? 0 : 3}, 0));
  if (me == 0) {
    CHECK(to_zero.batch_size() == 3 * (world_size() - 1));
  } else {
    CHECK(to_zero.batch_size() == 0);
    CHECK(to_zero.last_dim() == 2);
    CHECK(to_zero.element_rank() == 2);
  }
}

TEMPLATE_TEST_CASE("rebalance keeps the global order in row-balanced contiguous shares", "[mpi]",
                   float, std::int16_t) {
  using T = TestType;
  const int me = world_rank(), size = world_size();
  for (unsigned seed = 11; seed <= 16; ++seed) {
    const index_t element_rank = 1 + seed % 3, last_dim = 1 + seed % 3;
    const std::vector<Tensor<T>> all = global_elements<T>(seed, element_rank, last_dim);
    std::vector<index_t> first{0};
    index_t largest = 0;
    for (const Tensor<T>& e : all) {
      first.push_back(first.back() + rows_of_element(e.shape()));
      largest = std::max(largest, rows_of_element(e.shape()));
    }
    const std::vector<index_t> bounds =
        mpi::detail::balanced_boundaries(first.data(), index_t(all.size()), size);
    const PackedBatch<T> got =
        mpi::rebalance(world, list_to_packed(rank_list<T>(seed, me, element_rank, last_dim)));
    INFO("seed " << seed);
    check_elements(got, std::vector<Tensor<T>>(all.begin() + bounds[std::size_t(me)],
                                               all.begin() + bounds[std::size_t(me) + 1]));
    const index_t rows = got.batch_size() > 0 ? got.data().size(0) : 0;
    CHECK(std::abs(rows * size - first.back()) <= largest * size);
  }
}

TEST_CASE("bucket_by_size gives each rank a sorted, contiguous range of sizes", "[mpi]") {
  const int me = world_rank(), size = world_size();
  for (unsigned seed = 21; seed <= 26; ++seed) {
    std::vector<Tensor<float>> all = global_elements<float>(seed, 2, 3);
    std::stable_sort(all.begin(), all.end(), [](const Tensor<float>& a, const Tensor<float>& b) {
      return a.size(0) < b.size(0);
    });
    std::vector<index_t> first{0};
    for (const Tensor<float>& e : all)
      first.push_back(first.back() + e.size(0));
    const std::vector<index_t> bounds =
        mpi::detail::balanced_boundaries(first.data(), index_t(all.size()), size);
    const PackedBatch<float> got =
        mpi::bucket_by_size(world, list_to_packed(rank_list<float>(seed, me, 2, 3)));
    INFO("seed " << seed);
    check_elements(got, std::vector<Tensor<float>>(all.begin() + bounds[std::size_t(me)],
                                                   all.begin() + bounds[std::size_t(me) + 1]));
  }
}

TEST_CASE("all_to_all argument errors are raised on every rank", "[mpi]") {
  const int me = world_rank(), size = world_size(), last = size - 1;
  const PackedBatch<float> local = list_to_packed(
      std::vector<Tensor<float>>{Tensor<float>(Shape{2, 3}), Tensor<float>(Shape{1, 3})});
  SECTION("a destination out of range") {
    Tensor<index_t> to(Shape{2}, 0);
    if (me == 1) to(1) = size;
    TBATCH_CHECK_THROWS_WITH(
        mpi::all_to_all(world, local, to), IndexError,
        tbatch::detail::concat("mpi::all_to_all: rank 1's destination[1] = ", size,
                               " is out of range for a communicator of ", size, " ranks"));
  }
  SECTION("a destination of the wrong length or rank") {
    const Tensor<index_t> to =
        me == last ? Tensor<index_t>(Shape{3}, 0) : Tensor<index_t>(Shape{2}, 0);
    TBATCH_CHECK_THROWS_WITH(
        mpi::all_to_all(world, local, to), ShapeError,
        tbatch::detail::concat("mpi::all_to_all: rank ", last,
                               "'s destination has 3 entries but its batch has 2 elements"));
    const Tensor<index_t> flat =
        me == 0 ? Tensor<index_t>(Shape{1, 2}, 0) : Tensor<index_t>(Shape{2}, 0);
    TBATCH_CHECK_THROWS_WITH(mpi::all_to_all(world, local, flat), ShapeError,
                             "mpi::all_to_all: rank 0's destination has 2 dims");
  }
  SECTION("mismatched last dims") {
    const PackedBatch<float> other =
        me == 1 ? list_to_packed(std::vector<Tensor<float>>{Tensor<float>(Shape{2, 4})}) : local;
    TBATCH_CHECK_THROWS_WITH(mpi::rebalance(world, other), ShapeError,
                             "mpi::rebalance: rank 1 has last dim 4 but rank 0 has last dim 3");
  }
  check_still_in_step();
}
