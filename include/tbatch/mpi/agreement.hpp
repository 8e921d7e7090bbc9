#pragma once
// Descriptor agreement: every tbatch::mpi call first all-gathers a small descriptor of each
// rank's batch (which call, dtype, element rank, last dim, element and row counts, root, and a
// problem found in the rank's own arguments), so a mismatch between ranks is found by every
// rank from the same data and thrown as the same tbatch::Error everywhere, before any
// variable-sized message is posted: a bad call never leaves a rank waiting in a collective.

#include <mpi.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/mpi/balance.hpp"
#include "tbatch/mpi/config.hpp"
#include "tbatch/tensor/tensor.hpp"

#if TBATCH_MPI_DEFINITIONS
#include <string>
#include <tuple>

#include "tbatch/base/errors.hpp"
#include "tbatch/mpi/datatype.hpp"
#endif

namespace tbatch::mpi::detail {

/// Which tbatch::mpi call a rank made; part of the descriptor so ranks that make different
/// calls are told so instead of posting mismatched collectives.
enum class Collective : std::int64_t {
  allgather_packed = 1,
  allgather_padded = 2,
  gather = 3,
  scatter_balanced = 4,
  all_to_all = 5,
  rebalance = 6,
  bucket_by_size = 7
};

/// A rank's own argument that is wrong (found locally, raised on every rank after the exchange).
enum class Problem : std::int64_t {
  none = 0,
  destination_rank = 1,
  destination_length = 2,
  destination_value = 3
};

/// What every rank tells every other rank before any data moves.
struct Descriptor {
  std::int64_t collective;
  std::int64_t dtype;
  std::int64_t element_rank;
  std::int64_t last_dim;
  std::int64_t batch;
  std::int64_t rows;
  std::int64_t root;
  std::int64_t problem = 0;  // a Problem
  std::int64_t problem_index = 0;
  std::int64_t problem_value = 0;
};
inline constexpr int descriptor_fields = 10;
static_assert(sizeof(Descriptor) == descriptor_fields * sizeof(std::int64_t));

/// The outcome of the descriptor exchange, identical on every rank.
struct Agreement {
  int size = 0;  // ranks in the communicator
  int me = 0;    // this rank
  std::vector<Descriptor> all;
  index_t element_rank = 1;  // of the result
  index_t last_dim = 0;      // of the result
};

/// Size and rank of `comm`, after checking that it can be used (local checks: they hold on every
/// rank alike or the program is not a valid MPI program).
TBATCH_INLINE std::pair<int, int> communicator_shape(MPI_Comm comm, const char* function);

/// All-gathers every rank's descriptor and checks, identically on every rank, that the ranks
/// agree: the same call, the same root (in range), the same dtype, and for the gathers the same
/// element rank and last dim among the ranks that hold elements (a rank with no elements
/// constrains nothing). The result's element rank and last dim are those of the root for
/// scatter_balanced, else of the first rank with elements (rank 0 if none has any). `dtype` is
/// this rank's element type; `destination` (all_to_all's) is checked into this rank's
/// descriptor (check_destination) when given.
TBATCH_INLINE Agreement agree(MPI_Comm comm, Collective collective, const char* function,
                              DType dtype, index_t element_rank, index_t last_dim, index_t batch,
                              index_t rows, int root, const Tensor<index_t>* destination = nullptr);

/// Row widths above INT_MAX cannot be described to MPI (a row type's count is int); checked
/// before anything is allocated.
TBATCH_INLINE void check_widths(const Agreement& a, index_t columns,
                                const Displacements& by_element, const Displacements& by_row,
                                const char* function);

/// Element counts (field `batch`) or row counts (field `rows`) of every rank's descriptor.
TBATCH_INLINE std::vector<index_t> per_rank(const Agreement& a, std::int64_t Descriptor::*field);

/// The checks of an all_to_all destination tensor on this rank, recorded in its descriptor.
TBATCH_INLINE void check_destination(Descriptor& d, int size, const Tensor<index_t>& destination);

#if TBATCH_MPI_DEFINITIONS

using tbatch::detail::concat;
using tbatch::detail::fail;

// The name of a Collective in the messages.
TBATCH_INLINE const char* collective_name(std::int64_t collective) {
  switch (static_cast<Collective>(collective)) {
    case Collective::allgather_packed:
      return "allgather(PackedBatch)";
    case Collective::allgather_padded:
      return "allgather(PaddedBatch)";
    case Collective::gather:
      return "gather";
    case Collective::scatter_balanced:
      return "scatter_balanced";
    case Collective::all_to_all:
      return "all_to_all";
    case Collective::rebalance:
      return "rebalance";
    case Collective::bucket_by_size:
      return "bucket_by_size";
  }
  return "an unknown tbatch::mpi call";
}

// A descriptor's dtype in the messages (any value: it came from another rank).
TBATCH_INLINE std::string dtype_text(std::int64_t dtype) {
  if (dtype < 0 || dtype > static_cast<std::int64_t>(DType::boolean))
    return concat("<unknown dtype ", dtype, ">");
  return std::string(dtype_name(static_cast<DType>(dtype)));
}

TBATCH_INLINE std::pair<int, int> communicator_shape(MPI_Comm comm, const char* function) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    fail<ValueError>(function, {"MPI is not initialized; call MPI_Init before tbatch::mpi"});
  MPI_Finalized(&finalized);
  if (finalized) fail<ValueError>(function, {"MPI is already finalized"});
  if (comm == MPI_COMM_NULL)
    fail<ValueError>(function,
                     {"the communicator is MPI_COMM_NULL; expected an intracommunicator this "
                      "process belongs to"});
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), function, "MPI_Comm_test_inter");
  if (inter)
    fail<ValueError>(function, {"the communicator is an intercommunicator; expected an "
                                "intracommunicator"});
  int size = 0, rank = 0;
  check_mpi(MPI_Comm_size(comm, &size), function, "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), function, "MPI_Comm_rank");
  return {size, rank};
}

TBATCH_INLINE void check_widths(const Agreement& a, index_t columns,
                                const Displacements& by_element, const Displacements& by_row,
                                const char* function) {
  if (columns > 0 && by_element.total > 0) int_count(columns, function, "the element rank - 1");
  if (a.last_dim > 0 && by_row.total > 0) int_count(a.last_dim, function, "the last dim");
}

TBATCH_INLINE std::vector<index_t> per_rank(const Agreement& a, std::int64_t Descriptor::*field) {
  std::vector<index_t> out;
  out.reserve(a.all.size());
  for (const Descriptor& d : a.all)
    out.push_back(d.*field);
  return out;
}

TBATCH_INLINE void check_destination(Descriptor& d, int size, const Tensor<index_t>& destination) {
  if (destination.dim() != 1) {
    d.problem = std::int64_t(Problem::destination_rank);
    d.problem_value = destination.dim();
    return;
  }
  if (destination.size(0) != d.batch) {
    d.problem = std::int64_t(Problem::destination_length);
    d.problem_value = destination.size(0);
    return;
  }
  for (index_t i = 0; i < d.batch; ++i) {
    const index_t to = destination(i);
    if (to < 0 || to >= size) {
      d.problem = std::int64_t(Problem::destination_value);
      d.problem_index = i;
      d.problem_value = to;
      return;
    }
  }
}

TBATCH_INLINE Agreement agree(MPI_Comm comm, Collective collective, const char* function,
                              DType dtype, index_t element_rank, index_t last_dim, index_t batch,
                              index_t rows, int root, const Tensor<index_t>* destination) {
  Agreement a;
  std::tie(a.size, a.me) = communicator_shape(comm, function);
  Descriptor mine{static_cast<std::int64_t>(collective),
                  static_cast<std::int64_t>(dtype),
                  element_rank,
                  last_dim,
                  batch,
                  rows,
                  root};
  if (destination != nullptr) check_destination(mine, a.size, *destination);
  a.all.resize(static_cast<std::size_t>(a.size));
  check_mpi(MPI_Allgather(&mine, descriptor_fields, MPI_INT64_T, a.all.data(), descriptor_fields,
                          MPI_INT64_T, comm),
            function, "MPI_Allgather");
  // all(r): rank r's descriptor (ranks are ints, as in MPI).
  auto all = [&a](int r) -> const Descriptor& { return a.all[static_cast<std::size_t>(r)]; };

  for (int r = 1; r < a.size; ++r)
    if (all(r).collective != all(0).collective)
      fail<ValueError>(function, {"rank ", r, " called ", collective_name(all(r).collective),
                                  " but rank 0 called ", collective_name(all(0).collective),
                                  "; every rank of the communicator must make the same call"});

  for (int r = 0; r < a.size; ++r) {
    const Descriptor& d = all(r);
    switch (static_cast<Problem>(d.problem)) {
      case Problem::none:
        break;
      case Problem::destination_rank:
        fail<ShapeError>(function, {"rank ", r, "'s destination has ", d.problem_value,
                                    " dims; expected a 1-d tensor of one rank per element"});
      case Problem::destination_length:
        fail<ShapeError>(function, {"rank ", r, "'s destination has ", d.problem_value,
                                    " entries but its batch has ", d.batch,
                                    " elements; expected one destination rank per element"});
      case Problem::destination_value:
        fail<IndexError>(function, {"rank ", r, "'s destination[", d.problem_index, "] = ",
                                    d.problem_value, " is out of range for a communicator of ",
                                    a.size, " ranks (expected 0 to ", a.size - 1, ")"});
    }
  }

  const bool rooted =
      collective == Collective::gather || collective == Collective::scatter_balanced;
  if (rooted) {
    for (int r = 1; r < a.size; ++r)
      if (all(r).root != all(0).root)
        fail<ValueError>(function,
                         {"rank ", r, " passed root ", all(r).root, " but rank 0 passed root ",
                          all(0).root, "; every rank must pass the same root"});
    if (root < 0 || root >= a.size)
      fail<IndexError>(function, {"root ", root, " is out of range for a communicator of ", a.size,
                                  " ranks (expected 0 to ", a.size - 1, ")"});
  }

  const int dtype_reference = rooted ? root : 0;
  for (int r = 0; r < a.size; ++r)
    if (all(r).dtype != all(dtype_reference).dtype)
      fail<TypeError>(function,
                      {"rank ", r, " has dtype ", dtype_text(all(r).dtype), " but rank ",
                       dtype_reference, " has dtype ", dtype_text(all(dtype_reference).dtype),
                       "; every rank must use the same element type"});

  int shape_reference = 0;
  if (collective == Collective::scatter_balanced) {
    shape_reference = root;
  } else {
    while (shape_reference < a.size && all(shape_reference).batch == 0)
      ++shape_reference;
    if (shape_reference == a.size) shape_reference = 0;
    const Descriptor& ref = all(shape_reference);
    for (int r = 0; r < a.size; ++r) {
      if (all(r).batch == 0) continue;
      if (all(r).element_rank != ref.element_rank)
        fail<ShapeError>(function,
                         {"rank ", r, " has elements of rank ", all(r).element_rank, " but rank ",
                          shape_reference, " has elements of rank ", ref.element_rank,
                          "; every rank's elements must have the same rank"});
      if (all(r).last_dim != ref.last_dim)
        fail<ShapeError>(function, {"rank ", r, " has last dim ", all(r).last_dim, " but rank ",
                                    shape_reference, " has last dim ", ref.last_dim,
                                    "; every rank's elements must share the last dim"});
    }
  }
  a.element_rank = all(shape_reference).element_rank;
  a.last_dim = all(shape_reference).last_dim;
  return a;
}

#endif  // TBATCH_MPI_DEFINITIONS

}  // namespace tbatch::mpi::detail
