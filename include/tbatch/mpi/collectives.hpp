#pragma once
// Distributed batching over MPI: all-gather, gather and balanced scatter of packed batches, and
// all-gather of padded batches, across the ranks of a communicator. Optional: it needs an MPI
// implementation (link tbatch::tbatch_mpi), so the umbrella tbatch.hpp does not include it.
//
// Every call first all-gathers a small descriptor of each rank's batch (which call, dtype,
// element rank, last dim, element and row counts, root), so a mismatch between ranks is found
// by every rank from the same data and thrown as the same tbatch::Error everywhere, before any
// variable-sized message is posted: a bad call never leaves a rank waiting in a collective.

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch::mpi {

/// An MPI datatype handle. Derived types created by tbatch are owned and freed on destruction
/// (unless MPI is already finalized); predefined handles (MPI_FLOAT, ...) are never freed.
/// Move-only.
class Datatype {
 public:
  /// Wraps a predefined handle.
  static Datatype predefined(MPI_Datatype type) { return Datatype(type, false); }
  /// Takes ownership of a committed derived type.
  static Datatype owned(MPI_Datatype type) { return Datatype(type, true); }

  Datatype(Datatype&& other) noexcept
      : type_(other.type_), owned_(std::exchange(other.owned_, false)) {}
  Datatype& operator=(Datatype&& other) noexcept {
    if (this != &other) {
      release();
      type_ = other.type_;
      owned_ = std::exchange(other.owned_, false);
    }
    return *this;
  }
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;
  ~Datatype() { release(); }

  MPI_Datatype get() const { return type_; }
  bool is_owned() const { return owned_; }

 private:
  Datatype(MPI_Datatype type, bool owned) : type_(type), owned_(owned) {}
  void release() noexcept {
    if (!owned_) return;
    owned_ = false;
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Type_free(&type_);
  }

  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  bool owned_ = false;
};

namespace detail {

using tbatch::detail::checked_add;
using tbatch::detail::concat;
using tbatch::detail::fail;

/// Throws tbatch::Error "<function>: <call> failed: <MPI's error text>" unless `code` is
/// MPI_SUCCESS (reached only when the communicator's error handler returns errors).
inline void check_mpi(int code, const char* function, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  fail<Error>(function, call, " failed with MPI error code ", code, ": ",
              std::string(text, static_cast<std::size_t>(length)));
}

/// `value` as an MPI int count; ShapeError naming `what` when it does not fit.
inline int int_count(index_t value, const char* function, const char* what) {
  if (value > INT_MAX)
    fail<ShapeError>(function, what, " ", value, " exceeds MPI's int count limit ", INT_MAX);
  return static_cast<int>(value);
}

/// Commits `type` and returns it owned (freed again if the commit fails).
inline Datatype commit_owned(MPI_Datatype type, const char* function) {
  const int code = MPI_Type_commit(&type);
  if (code != MPI_SUCCESS) {
    MPI_Type_free(&type);
    check_mpi(code, function, "MPI_Type_commit");
  }
  return Datatype::owned(type);
}

/// A committed contiguous type of `count` elements of `element`.
inline Datatype contiguous(index_t count, MPI_Datatype element, const char* function,
                           const char* what) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  check_mpi(MPI_Type_contiguous(int_count(count, function, what), element, &type), function,
            "MPI_Type_contiguous");
  return commit_owned(type, function);
}

}  // namespace detail

/// The MPI datatype of one element of T: the matching predefined type for float, double and
/// the fixed-width integers, MPI_BYTE for bool, and a committed 2-byte blob
/// (MPI_Type_contiguous(2, MPI_BYTE)) for Eigen::half and Eigen::bfloat16, which MPI has no
/// type for (the bits are moved unchanged).
template <Element T>
Datatype datatype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) {
    return Datatype::predefined(MPI_FLOAT);
  } else if constexpr (std::is_same_v<U, double>) {
    return Datatype::predefined(MPI_DOUBLE);
  } else if constexpr (std::is_same_v<U, std::int8_t>) {
    return Datatype::predefined(MPI_INT8_T);
  } else if constexpr (std::is_same_v<U, std::int16_t>) {
    return Datatype::predefined(MPI_INT16_T);
  } else if constexpr (std::is_same_v<U, std::int32_t>) {
    return Datatype::predefined(MPI_INT32_T);
  } else if constexpr (std::is_same_v<U, std::int64_t>) {
    return Datatype::predefined(MPI_INT64_T);
  } else if constexpr (std::is_same_v<U, std::uint8_t>) {
    return Datatype::predefined(MPI_UINT8_T);
  } else if constexpr (std::is_same_v<U, std::uint16_t>) {
    return Datatype::predefined(MPI_UINT16_T);
  } else if constexpr (std::is_same_v<U, std::uint32_t>) {
    return Datatype::predefined(MPI_UINT32_T);
  } else if constexpr (std::is_same_v<U, bool>) {
    static_assert(sizeof(bool) == 1, "tbatch::mpi sends bool as one byte");
    return Datatype::predefined(MPI_BYTE);
  } else {
    static_assert(std::is_same_v<U, Eigen::half> || std::is_same_v<U, Eigen::bfloat16>);
    static_assert(sizeof(U) == 2, "tbatch::mpi sends half and bfloat16 as 2-byte blobs");
    return detail::contiguous(2, MPI_BYTE, "mpi::datatype_of", "blob size");
  }
}

namespace detail {

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

inline const char* collective_name(std::int64_t collective) {
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

inline std::string dtype_text(std::int64_t dtype) {
  if (dtype < 0 || dtype > static_cast<std::int64_t>(DType::boolean))
    return concat("<unknown dtype ", dtype, ">");
  return std::string(dtype_name(static_cast<DType>(dtype)));
}

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

/// For collectives whose arguments need no check beyond the descriptor's.
inline constexpr auto no_argument_checks = [](Descriptor&, int) {};

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
inline std::pair<int, int> communicator_shape(MPI_Comm comm, const char* function) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    fail<ValueError>(function, "MPI is not initialized; call MPI_Init before tbatch::mpi");
  MPI_Finalized(&finalized);
  if (finalized) fail<ValueError>(function, "MPI is already finalized");
  if (comm == MPI_COMM_NULL)
    fail<ValueError>(function,
                     "the communicator is MPI_COMM_NULL; expected an intracommunicator this "
                     "process belongs to");
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), function, "MPI_Comm_test_inter");
  if (inter)
    fail<ValueError>(function,
                     "the communicator is an intercommunicator; expected an "
                     "intracommunicator");
  int size = 0, rank = 0;
  check_mpi(MPI_Comm_size(comm, &size), function, "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), function, "MPI_Comm_rank");
  return {size, rank};
}

/// All-gathers every rank's descriptor and checks, identically on every rank, that the ranks
/// agree: the same call, the same root (in range), the same dtype, and for the gathers the same
/// element rank and last dim among the ranks that hold elements (a rank with no elements
/// constrains nothing). The result's element rank and last dim are those of the root for
/// scatter_balanced, else of the first rank with elements (rank 0 if none has any).
template <class T, class CheckArguments>
Agreement agree(MPI_Comm comm, Collective collective, const char* function, index_t element_rank,
                index_t last_dim, index_t batch, index_t rows, int root,
                CheckArguments&& check_arguments) {
  Agreement a;
  std::tie(a.size, a.me) = communicator_shape(comm, function);
  Descriptor mine{static_cast<std::int64_t>(collective),
                  static_cast<std::int64_t>(dtype_of<T>),
                  element_rank,
                  last_dim,
                  batch,
                  rows,
                  root};
  check_arguments(mine, a.size);
  a.all.resize(static_cast<std::size_t>(a.size));
  check_mpi(MPI_Allgather(&mine, descriptor_fields, MPI_INT64_T, a.all.data(), descriptor_fields,
                          MPI_INT64_T, comm),
            function, "MPI_Allgather");
  // all(r): rank r's descriptor (ranks are ints, as in MPI).
  auto all = [&a](int r) -> const Descriptor& { return a.all[static_cast<std::size_t>(r)]; };

  for (int r = 1; r < a.size; ++r)
    if (all(r).collective != all(0).collective)
      fail<ValueError>(function, "rank ", r, " called ", collective_name(all(r).collective),
                       " but rank 0 called ", collective_name(all(0).collective),
                       "; every rank of the communicator must make the same call");

  for (int r = 0; r < a.size; ++r) {
    const Descriptor& d = all(r);
    switch (static_cast<Problem>(d.problem)) {
      case Problem::none:
        break;
      case Problem::destination_rank:
        fail<ShapeError>(function, "rank ", r, "'s destination has ", d.problem_value,
                         " dims; expected a 1-d tensor of one rank per element");
      case Problem::destination_length:
        fail<ShapeError>(function, "rank ", r, "'s destination has ", d.problem_value,
                         " entries but its batch has ", d.batch,
                         " elements; expected one destination rank per element");
      case Problem::destination_value:
        fail<IndexError>(function, "rank ", r, "'s destination[", d.problem_index,
                         "] = ", d.problem_value, " is out of range for a communicator of ", a.size,
                         " ranks (expected 0 to ", a.size - 1, ")");
    }
  }

  const bool rooted =
      collective == Collective::gather || collective == Collective::scatter_balanced;
  if (rooted) {
    for (int r = 1; r < a.size; ++r)
      if (all(r).root != all(0).root)
        fail<ValueError>(function, "rank ", r, " passed root ", all(r).root,
                         " but rank 0 passed root ", all(0).root,
                         "; every rank must pass the same root");
    if (root < 0 || root >= a.size)
      fail<IndexError>(function, "root ", root, " is out of range for a communicator of ", a.size,
                       " ranks (expected 0 to ", a.size - 1, ")");
  }

  const int dtype_reference = rooted ? root : 0;
  for (int r = 0; r < a.size; ++r)
    if (all(r).dtype != all(dtype_reference).dtype)
      fail<TypeError>(function, "rank ", r, " has dtype ", dtype_text(all(r).dtype), " but rank ",
                      dtype_reference, " has dtype ", dtype_text(all(dtype_reference).dtype),
                      "; every rank must use the same element type");

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
        fail<ShapeError>(function, "rank ", r, " has elements of rank ", all(r).element_rank,
                         " but rank ", shape_reference, " has elements of rank ", ref.element_rank,
                         "; every rank's elements must have the same rank");
      if (all(r).last_dim != ref.last_dim)
        fail<ShapeError>(function, "rank ", r, " has last dim ", all(r).last_dim, " but rank ",
                         shape_reference, " has last dim ", ref.last_dim,
                         "; every rank's elements must share the last dim");
    }
  }
  a.element_rank = all(shape_reference).element_rank;
  a.last_dim = all(shape_reference).last_dim;
  return a;
}

/// Counts and displacements of a v-collective that places each rank's items after the previous
/// rank's. When `limited` (the items are really sent), a count or displacement above INT_MAX is
/// a ShapeError naming the rank: MPI counts are int, and truncating them would corrupt data.
struct Displacements {
  std::vector<int> counts, displs;
  index_t total = 0;
};

inline Displacements displacements(const std::vector<index_t>& items, bool limited,
                                   const char* function, const char* unit) {
  Displacements d;
  d.counts.resize(items.size());
  d.displs.resize(items.size());
  for (std::size_t r = 0; r < items.size(); ++r) {
    if (limited && items[r] > 0) {  // a rank with nothing to send needs no displacement
      if (items[r] > INT_MAX)
        fail<ShapeError>(function, "rank ", r, " has ", items[r], " ", unit,
                         " to exchange but MPI counts are int (at most ", INT_MAX,
                         "); split the batch into smaller ones");
      if (d.total > INT_MAX)
        fail<ShapeError>(function, "rank ", r, "'s ", unit, " would start at offset ", d.total,
                         " but MPI displacements are int (at most ", INT_MAX, "); exchange fewer ",
                         unit, " at once");
      d.counts[r] = static_cast<int>(items[r]);
      d.displs[r] = static_cast<int>(d.total);
    }
    d.total = checked_add(d.total, items[r], function);
  }
  return d;
}

/// Row widths above INT_MAX cannot be described to MPI (a row type's count is int); checked
/// before anything is allocated.
inline void check_widths(const Agreement& a, index_t columns, const Displacements& by_element,
                         const Displacements& by_row, const char* function) {
  if (columns > 0 && by_element.total > 0) int_count(columns, function, "the element rank - 1");
  if (a.last_dim > 0 && by_row.total > 0) int_count(a.last_dim, function, "the last dim");
}

/// Element counts (field `batch`) or row counts (field `rows`) of every rank's descriptor.
inline std::vector<index_t> per_rank(const Agreement& a, std::int64_t Descriptor::*field) {
  std::vector<index_t> out;
  out.reserve(a.all.size());
  for (const Descriptor& d : a.all)
    out.push_back(d.*field);
  return out;
}

/// Collects every rank's `local` rows (n, width), in rank order, into `out` (total, width) on
/// every rank (root < 0: MPI_Allgatherv in place) or on `root` (MPI_Gatherv; `out` is unused
/// elsewhere). Nothing is sent when there are no rows or the rows are empty.
template <class T>
void collect_rows(MPI_Comm comm, int root, const Agreement& a, const Tensor<T>& local,
                  Tensor<T>* out, index_t width, const Displacements& d, const char* function) {
  if (d.total == 0 || width == 0) return;
  const Datatype row = contiguous(width, datatype_of<T>().get(), function, "row width");
  const auto me = static_cast<std::size_t>(a.me);
  const int count = d.counts[me];
  if (root < 0 || a.me == root) {
    if (count > 0) copy(local.view(), out->narrow(0, d.displs[me], count).view());
    if (root < 0)
      check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out->data(), d.counts.data(),
                               d.displs.data(), row.get(), comm),
                function, "MPI_Allgatherv");
    else
      check_mpi(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out->data(), d.counts.data(),
                            d.displs.data(), row.get(), root, comm),
                function, "MPI_Gatherv");
  } else {
    const Tensor<T> dense = local.contiguous();
    check_mpi(MPI_Gatherv(dense.data(), count, row.get(), nullptr, d.counts.data(), d.displs.data(),
                          row.get(), root, comm),
              function, "MPI_Gatherv");
  }
}

/// Sends each rank its share of the root's rows (`source`, read on root only) into `out`.
template <class T>
void distribute_rows(MPI_Comm comm, int root, const Agreement& a, const Tensor<T>* source,
                     Tensor<T>& out, index_t width, const Displacements& d, const char* function) {
  if (d.total == 0 || width == 0) return;
  const Datatype row = contiguous(width, datatype_of<T>().get(), function, "row width");
  const int count = d.counts[static_cast<std::size_t>(a.me)];
  if (a.me == root) {
    const Tensor<T> dense = source->contiguous();
    check_mpi(MPI_Scatterv(dense.data(), d.counts.data(), d.displs.data(), row.get(), out.data(),
                           count, row.get(), root, comm),
              function, "MPI_Scatterv");
  } else {
    check_mpi(MPI_Scatterv(nullptr, d.counts.data(), d.displs.data(), row.get(), out.data(), count,
                           row.get(), root, comm),
              function, "MPI_Scatterv");
  }
}

/// The packed batch of `data` and `shape_per_tensor`, first_idx rebuilt from the shapes.
template <class T>
PackedBatch<T> assemble(Tensor<T> data, const Tensor<index_t>& shape_per_tensor,
                        const char* function) {
  Tensor<index_t> rows = Tensor<index_t>::empty(Shape{shape_per_tensor.size(0)});
  for (index_t i = 0; i < shape_per_tensor.size(0); ++i)
    rows.data()[i] = tbatch::detail::rows_of(shape_per_tensor, i, function);
  return PackedBatch<T>(std::move(data), shape_per_tensor, get_first_idx(rows));
}

/// A batch of no elements with the given element rank and last dim.
template <class T>
PackedBatch<T> empty_packed(index_t element_rank, index_t last_dim) {
  return PackedBatch<T>(Tensor<T>(Shape{0, last_dim}), Tensor<index_t>(Shape{0, element_rank - 1}),
                        Tensor<index_t>(Shape{1}));
}

/// all-gather (root < 0) or gather to root of packed batches whose descriptors agreed.
template <class T>
PackedBatch<T> collect_packed(MPI_Comm comm, int root, const Agreement& a,
                              const PackedBatch<T>& local, const char* function) {
  const index_t columns = a.element_rank - 1;
  const Displacements by_element =
      displacements(per_rank(a, &Descriptor::batch), columns > 0, function, "elements");
  const Displacements by_row =
      displacements(per_rank(a, &Descriptor::rows), a.last_dim > 0, function, "rows");
  check_widths(a, columns, by_element, by_row, function);
  const bool receives = root < 0 || a.me == root;
  Tensor<index_t> shapes;
  Tensor<T> data;
  if (receives) {
    shapes = Tensor<index_t>::empty(Shape{by_element.total, columns});
    data = Tensor<T>::empty(Shape{by_row.total, a.last_dim});
  }
  // Metadata first, then the rows.
  collect_rows(comm, root, a, local.shape_per_tensor(), receives ? &shapes : nullptr, columns,
               by_element, function);
  collect_rows(comm, root, a, local.data(), receives ? &data : nullptr, a.last_dim, by_row,
               function);
  if (!receives) return empty_packed<T>(a.element_rank, a.last_dim);
  return assemble(std::move(data), shapes, function);
}

/// Element boundaries splitting a packed batch (its first_idx, B + 1 row offsets) into `parts`
/// contiguous shares balanced by rows: share k is elements [bounds[k], bounds[k + 1]).
/// Boundary k is the element start whose row offset is nearest to k * total_rows / parts
/// (ties: the start nearer to k * B / parts); among starts with that same offset (zero-row
/// elements) the one nearest to k * B / parts. So each share's rows differ from
/// total_rows / parts by at most the largest element's row count, and batches of zero-row
/// elements are split by element count.
inline std::vector<index_t> balanced_boundaries(const index_t* first_idx, index_t batch,
                                                int parts) {
  __extension__ typedef __int128 wide;  // total_rows * parts may exceed 64 bits
  std::vector<index_t> bounds(static_cast<std::size_t>(parts) + 1, 0);
  bounds.back() = batch;
  const index_t* begin = first_idx;
  const index_t* end = first_idx + batch + 1;
  const wide total = first_idx[batch];
  for (int k = 1; k < parts; ++k) {
    const wide target = total * k;                // rows, in units of 1 / parts
    const wide element_target = wide(batch) * k;  // elements, in units of 1 / parts
    const index_t* above = std::lower_bound(
        begin, end, target, [parts](index_t offset, wide t) { return wide(offset) * parts < t; });
    index_t chosen = *above;  // above < end: first_idx[batch] * parts >= target
    if (above != begin) {
      const index_t at = above - begin;  // the plateau of *(above - 1) ends at at - 1
      const wide below_distance = target - wide(*(above - 1)) * parts;
      const wide above_distance = wide(*above) * parts - target;
      const wide below_elements = std::max<wide>(0, element_target - wide(at - 1) * parts);
      const wide above_elements = std::max<wide>(0, wide(at) * parts - element_target);
      if (below_distance < above_distance ||
          (below_distance == above_distance && below_elements <= above_elements))
        chosen = *(above - 1);
    }
    const index_t lo = std::lower_bound(begin, end, chosen) - begin;
    const index_t hi = (std::upper_bound(begin, end, chosen) - begin) - 1;
    const index_t nearest = static_cast<index_t>((element_target * 2 + parts) / (wide(2) * parts));
    const auto at = static_cast<std::size_t>(k);
    bounds[at] = std::max(bounds[at - 1], std::clamp(nearest, lo, hi));
  }
  return bounds;
}

/// The checks of an all_to_all destination tensor on this rank, recorded in its descriptor.
inline void check_destination(Descriptor& d, int size, const Tensor<index_t>& destination) {
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

/// Sends element i of `local` to rank destination[i] (checked) and returns what this rank
/// receives, in (source rank, source position) order: one MPI_Alltoall of the counts, then one
/// MPI_Alltoallv each for the shape rows and the data rows, from send buffers that hold each
/// destination's elements contiguously (`local` itself when they already are).
template <class T>
PackedBatch<T> exchange(MPI_Comm comm, const Agreement& a, const PackedBatch<T>& local,
                        const std::vector<int>& destination, const char* function) {
  const index_t batch = local.batch_size(), columns = a.element_rank - 1;
  const Tensor<index_t> first_idx = local.first_idx().contiguous();
  const index_t* first = first_idx.data();
  std::vector<index_t> send_elements(std::size_t(a.size), 0), send_rows(std::size_t(a.size), 0);
  for (index_t i = 0; i < batch; ++i) {
    ++send_elements[std::size_t(destination[std::size_t(i)])];
    send_rows[std::size_t(destination[std::size_t(i)])] += first[i + 1] - first[i];
  }
  const bool in_order = std::is_sorted(destination.begin(), destination.end());
  // A stable counting sort by destination: where each element's shape row and data rows go in
  // a send buffer that holds each destination's elements contiguously.
  std::vector<index_t> element_at(static_cast<std::size_t>(batch)),
      row_at(static_cast<std::size_t>(batch));
  {
    std::vector<index_t> next_element(std::size_t(a.size), 0), next_row(std::size_t(a.size), 0);
    for (int r = 1; r < a.size; ++r) {
      next_element[std::size_t(r)] =
          next_element[std::size_t(r - 1)] + send_elements[std::size_t(r - 1)];
      next_row[std::size_t(r)] = next_row[std::size_t(r - 1)] + send_rows[std::size_t(r - 1)];
    }
    for (index_t i = 0; i < batch; ++i) {
      const auto to = std::size_t(destination[std::size_t(i)]);
      element_at[std::size_t(i)] = next_element[to]++;
      row_at[std::size_t(i)] = next_row[to];
      next_row[to] += first[i + 1] - first[i];
    }
  }
  Tensor<index_t> send_shapes = local.shape_per_tensor();
  if (!in_order) {
    send_shapes = Tensor<index_t>::empty(Shape{batch, columns});
    for (index_t i = 0; i < batch; ++i)
      copy(local.shape_per_tensor().narrow(0, i, 1).view(),
           send_shapes.narrow(0, element_at[std::size_t(i)], 1).view());
  }
  // Counts: (elements, rows) per destination, transposed into (elements, rows) per source.
  std::vector<index_t> send_counts(2 * std::size_t(a.size)),
      receive_counts(2 * std::size_t(a.size));
  for (int r = 0; r < a.size; ++r) {
    send_counts[2 * std::size_t(r)] = send_elements[std::size_t(r)];
    send_counts[2 * std::size_t(r) + 1] = send_rows[std::size_t(r)];
  }
  check_mpi(
      MPI_Alltoall(send_counts.data(), 2, MPI_INT64_T, receive_counts.data(), 2, MPI_INT64_T, comm),
      function, "MPI_Alltoall");
  std::vector<index_t> receive_elements(std::size_t(a.size)), receive_rows(std::size_t(a.size));
  for (int r = 0; r < a.size; ++r) {
    receive_elements[std::size_t(r)] = receive_counts[2 * std::size_t(r)];
    receive_rows[std::size_t(r)] = receive_counts[2 * std::size_t(r) + 1];
  }
  const Displacements send_by_element =
      displacements(send_elements, columns > 0, function, "elements");
  const Displacements send_by_row = displacements(send_rows, a.last_dim > 0, function, "rows");
  const Displacements receive_by_element =
      displacements(receive_elements, columns > 0, function, "elements");
  const Displacements receive_by_row =
      displacements(receive_rows, a.last_dim > 0, function, "rows");
  if (columns > 0) int_count(columns, function, "the element rank - 1");
  if (a.last_dim > 0) int_count(a.last_dim, function, "the last dim");
  Tensor<index_t> shapes = Tensor<index_t>::empty(Shape{receive_by_element.total, columns});
  Tensor<T> data = Tensor<T>::empty(Shape{receive_by_row.total, a.last_dim});
  if (columns > 0) {  // the same on every rank: the widths were agreed
    const Datatype row = contiguous(columns, datatype_of<index_t>().get(), function, "row width");
    const Tensor<index_t> dense = send_shapes.contiguous();
    check_mpi(
        MPI_Alltoallv(dense.data(), send_by_element.counts.data(), send_by_element.displs.data(),
                      row.get(), shapes.data(), receive_by_element.counts.data(),
                      receive_by_element.displs.data(), row.get(), comm),
        function, "MPI_Alltoallv");
  }
  if (a.last_dim == 0) return assemble(std::move(data), shapes, function);

  const Datatype row = contiguous(a.last_dim, datatype_of<T>().get(), function, "row width");
  const Tensor<T> rows = local.data().contiguous();
  // MPI_Alltoallw takes byte displacements as int: above that, and for row offsets above int,
  // the rows are packed by destination and sent with MPI_Alltoallv (row displacements).
  const index_t row_bytes = a.last_dim * index_t(sizeof(T));
  const bool direct =
      rows.size(0) <= INT_MAX && receive_by_row.total <= INT_MAX / std::max<index_t>(row_bytes, 1);
  int direct_everywhere = direct ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &direct_everywhere, 1, MPI_INT, MPI_MIN, comm), function,
            "MPI_Allreduce");
  if (direct_everywhere) {
    // Each destination's rows straight from the batch: one indexed type per destination (runs
    // of consecutive elements merged), no packing copy.
    std::vector<std::vector<int>> starts(std::size_t(a.size)), lengths(std::size_t(a.size));
    for (index_t i = 0; i < batch; ++i) {
      const index_t n = first[i + 1] - first[i];
      if (n == 0) continue;
      auto& s = starts[std::size_t(destination[std::size_t(i)])];
      auto& l = lengths[std::size_t(destination[std::size_t(i)])];
      if (!s.empty() && s.back() + l.back() == first[i])
        l.back() += int(n);
      else
        s.push_back(int(first[i])), l.push_back(int(n));
    }
    std::vector<Datatype> owned;
    owned.reserve(std::size_t(a.size));
    std::vector<MPI_Datatype> send_types(std::size_t(a.size), row.get()),
        receive_types(std::size_t(a.size), row.get());
    std::vector<int> send_w(std::size_t(a.size), 0), send_at(std::size_t(a.size), 0),
        receive_w(std::size_t(a.size), 0), receive_at(std::size_t(a.size), 0);
    for (int r = 0; r < a.size; ++r) {
      const auto k = std::size_t(r);
      if (!starts[k].empty()) {
        MPI_Datatype type = MPI_DATATYPE_NULL;
        check_mpi(MPI_Type_indexed(int(starts[k].size()), lengths[k].data(), starts[k].data(),
                                   row.get(), &type),
                  function, "MPI_Type_indexed");
        owned.push_back(commit_owned(type, function));
        send_types[k] = owned.back().get();
        send_w[k] = 1;
      }
      receive_w[k] = int(receive_rows[k]);
      receive_at[k] = int(receive_by_row.displs[k] * row_bytes);
    }
    check_mpi(
        MPI_Alltoallw(rows.data(), send_w.data(), send_at.data(), send_types.data(), data.data(),
                      receive_w.data(), receive_at.data(), receive_types.data(), comm),
        function, "MPI_Alltoallw");
    return assemble(std::move(data), shapes, function);
  }
  Tensor<T> send_data = rows;
  if (!in_order) {
    send_data = Tensor<T>::empty(Shape{rows.size(0), a.last_dim});
    for (index_t i = 0; i < batch; ++i) {
      const index_t n = first[i + 1] - first[i];
      copy(rows.narrow(0, first[i], n).view(),
           send_data.narrow(0, row_at[std::size_t(i)], n).view());
    }
  }
  check_mpi(MPI_Alltoallv(send_data.data(), send_by_row.counts.data(), send_by_row.displs.data(),
                          row.get(), data.data(), receive_by_row.counts.data(),
                          receive_by_row.displs.data(), row.get(), comm),
            function, "MPI_Alltoallv");
  return assemble(std::move(data), shapes, function);
}

/// Every rank's per-element row counts, in global order (rank 0's elements first).
template <class T>
std::vector<index_t> global_rows(MPI_Comm comm, const Agreement& a, const PackedBatch<T>& local,
                                 const char* function) {
  const Displacements by_element =
      displacements(per_rank(a, &Descriptor::batch), true, function, "elements");
  std::vector<index_t> rows(std::size_t(by_element.total));
  const Tensor<index_t> first_idx = local.first_idx().contiguous();
  const index_t offset = by_element.displs[std::size_t(a.me)];
  for (index_t i = 0; i < local.batch_size(); ++i)
    rows[std::size_t(offset + i)] = first_idx(i + 1) - first_idx(i);
  if (by_element.total > 0)
    check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows.data(),
                             by_element.counts.data(), by_element.displs.data(), MPI_INT64_T, comm),
              function, "MPI_Allgatherv");
  return rows;
}

/// The share of `ranks` contiguous shares, balanced by rows (balanced_boundaries), that holds
/// position p of a sequence whose row counts are `rows` (in that order).
inline std::vector<int> balanced_shares(const std::vector<index_t>& rows, int ranks) {
  std::vector<index_t> first(rows.size() + 1, 0);
  for (std::size_t i = 0; i < rows.size(); ++i)
    first[i + 1] = first[i] + rows[i];
  const std::vector<index_t> bounds =
      balanced_boundaries(first.data(), index_t(rows.size()), ranks);
  std::vector<int> share(rows.size());
  for (int k = 0; k < ranks; ++k)
    for (index_t p = bounds[std::size_t(k)]; p < bounds[std::size_t(k) + 1]; ++p)
      share[std::size_t(p)] = k;
  return share;
}

/// This rank's part of `global` (one entry per element of every rank, in global order).
inline std::vector<int> local_part(const Agreement& a, const std::vector<int>& global) {
  index_t offset = 0;
  for (int r = 0; r < a.me; ++r)
    offset += a.all[std::size_t(r)].batch;
  return std::vector<int>(global.begin() + offset,
                          global.begin() + offset + a.all[std::size_t(a.me)].batch);
}

}  // namespace detail

/// Moves elements between ranks by a rule: element i of this rank's `local` goes to rank
/// `destination[i]`. Each rank receives a packed batch of the elements sent to it, in (source
/// rank, source position) order, with shape_per_tensor and first_idx rebuilt. One
/// MPI_Alltoall of the counts and one MPI_Alltoallv each for the shapes and the rows; the
/// elements for one rank are gathered into one contiguous send range (no message per element).
/// Collective over `comm`. tbatch::Error on every rank when any rank's destination is not
/// 1-d with one entry per element (ShapeError) or names a rank outside the communicator
/// (IndexError), and for the mismatches allgather reports.
template <Element T>
PackedBatch<T> all_to_all(MPI_Comm comm, const PackedBatch<T>& local,
                          const Tensor<index_t>& destination) {
  constexpr const char* function = "mpi::all_to_all";
  const detail::Agreement a = detail::agree<T>(
      comm, detail::Collective::all_to_all, function, local.element_rank(), local.last_dim(),
      local.batch_size(), local.data().size(0), -1,
      [&](detail::Descriptor& d, int size) { detail::check_destination(d, size, destination); });
  std::vector<int> to(std::size_t(local.batch_size()));
  for (index_t i = 0; i < local.batch_size(); ++i)
    to[std::size_t(i)] = int(destination(i));
  return detail::exchange(comm, a, local, to, function);
}

/// all_to_all of padded batches: the elements move as in the packed form, and each rank's
/// result is re-padded with `padding_value` to its own maximum element shape.
template <Element T>
PaddedBatch<T> all_to_all(MPI_Comm comm, const PaddedBatch<T>& local,
                          const Tensor<index_t>& destination,
                          std::type_identity_t<T> padding_value = T(0)) {
  return to_padded(all_to_all(comm, to_packed(local), destination), padding_value);
}

/// Evens out the ranks: the elements keep their global order (rank 0's first) and every rank
/// ends with a contiguous share of it balanced by row count, as scatter_balanced balances
/// (each share's rows differ from total_rows / ranks by at most one element's rows). Only the
/// per-element row counts are all-gathered; the rows move directly between ranks (all_to_all),
/// never through one root. Errors as allgather.
template <Element T>
PackedBatch<T> rebalance(MPI_Comm comm, const PackedBatch<T>& local) {
  constexpr const char* function = "mpi::rebalance";
  const detail::Agreement a = detail::agree<T>(
      comm, detail::Collective::rebalance, function, local.element_rank(), local.last_dim(),
      local.batch_size(), local.data().size(0), -1, detail::no_argument_checks);
  const std::vector<index_t> rows = detail::global_rows(comm, a, local, function);
  const std::vector<int> share = detail::balanced_shares(rows, a.size);
  const std::vector<int> to = detail::local_part(a, share);
  return detail::exchange(comm, a, local, to, function);
}

/// Length bucketing: the elements of all ranks sorted by row count (ties by global order) and
/// split into contiguous shares balanced by rows, rank 0 holding the smallest. Each rank gets
/// its share in sorted order, so batches cut from it hold elements of similar sizes. Only the
/// per-element row counts are all-gathered; the rows move directly (all_to_all). Errors as
/// allgather.
template <Element T>
PackedBatch<T> bucket_by_size(MPI_Comm comm, const PackedBatch<T>& local) {
  constexpr const char* function = "mpi::bucket_by_size";
  const detail::Agreement a = detail::agree<T>(
      comm, detail::Collective::bucket_by_size, function, local.element_rank(), local.last_dim(),
      local.batch_size(), local.data().size(0), -1, detail::no_argument_checks);
  const std::vector<index_t> rows = detail::global_rows(comm, a, local, function);
  std::vector<index_t> sorted(rows.size());  // global indices by (rows, index)
  for (std::size_t g = 0; g < rows.size(); ++g)
    sorted[g] = index_t(g);
  std::stable_sort(sorted.begin(), sorted.end(), [&](index_t x, index_t y) {
    return rows[std::size_t(x)] < rows[std::size_t(y)];
  });
  std::vector<index_t> sorted_rows(rows.size());
  for (std::size_t p = 0; p < rows.size(); ++p)
    sorted_rows[p] = rows[std::size_t(sorted[p])];
  const std::vector<int> share_at = detail::balanced_shares(sorted_rows, a.size);
  std::vector<int> share(rows.size());  // by global index
  for (std::size_t p = 0; p < rows.size(); ++p)
    share[std::size_t(sorted[p])] = share_at[p];
  const std::vector<int> to = detail::local_part(a, share);
  const PackedBatch<T> received = detail::exchange(comm, a, local, to, function);
  // Received in global order; this rank's share of the sorted order is what it wants.
  std::vector<index_t> mine;  // global indices received, ascending
  for (std::size_t g = 0; g < rows.size(); ++g)
    if (share[g] == a.me) mine.push_back(index_t(g));
  std::vector<Tensor<T>> ordered;
  for (std::size_t p = 0; p < rows.size(); ++p)
    if (share_at[p] == a.me)
      ordered.push_back(received.element(
          index_t(std::lower_bound(mine.begin(), mine.end(), sorted[p]) - mine.begin())));
  if (ordered.empty()) return detail::empty_packed<T>(a.element_rank, a.last_dim);
  return list_to_packed(ordered);
}

/// All-gathers the ranks' packed batches: every rank gets the global batch, elements in rank
/// order (rank 0's first), shape_per_tensor and first_idx rebuilt. The per-rank descriptors and
/// shape_per_tensor rows are exchanged first, then the rows with MPI_Allgatherv (one derived
/// row type of last_dim elements; this rank's rows are copied into place, any strides).
/// Collective over `comm`: every rank must call it. Ranks may hold no elements. tbatch::Error
/// on every rank when the ranks disagree (dtype: TypeError; element rank or last dim among
/// ranks with elements: ShapeError; a different call: ValueError) or when a rank's row count
/// or row offset exceeds MPI's int limit (ShapeError).
template <Element T>
PackedBatch<T> allgather(MPI_Comm comm, const PackedBatch<T>& local) {
  constexpr const char* function = "mpi::allgather";
  const detail::Agreement a = detail::agree<T>(
      comm, detail::Collective::allgather_packed, function, local.element_rank(), local.last_dim(),
      local.batch_size(), local.data().size(0), -1, detail::no_argument_checks);
  return detail::collect_packed(comm, -1, a, local, function);
}

/// Gathers the ranks' packed batches on `root`: the global batch there (as allgather), and on
/// every other rank an empty batch with the global element rank and last dim. Every rank must
/// pass the same root (ValueError otherwise, IndexError when out of range); other errors as
/// allgather.
template <Element T>
PackedBatch<T> gather(MPI_Comm comm, int root, const PackedBatch<T>& local) {
  constexpr const char* function = "mpi::gather";
  const detail::Agreement a = detail::agree<T>(
      comm, detail::Collective::gather, function, local.element_rank(), local.last_dim(),
      local.batch_size(), local.data().size(0), root, detail::no_argument_checks);
  return detail::collect_packed(comm, root, a, local, function);
}

/// Splits the root's packed batch into one contiguous share of elements per rank, in rank
/// order, balanced by row count rather than element count (see detail::balanced_boundaries:
/// each share's rows differ from total_rows / ranks by at most one element's rows). `batch` is
/// read on root only; other ranks pass any batch of the same dtype (e.g. list_to_packed of an
/// empty list). Every rank gets its share with shape_per_tensor and first_idx rebuilt.
template <Element T>
PackedBatch<T> scatter_balanced(MPI_Comm comm, int root, const PackedBatch<T>& batch) {
  constexpr const char* function = "mpi::scatter_balanced";
  const detail::Agreement a = detail::agree<T>(
      comm, detail::Collective::scatter_balanced, function, batch.element_rank(), batch.last_dim(),
      batch.batch_size(), batch.data().size(0), root, detail::no_argument_checks);
  // The root decides the split and tells everyone: element bounds, then their row offsets.
  const std::size_t n = static_cast<std::size_t>(a.size) + 1;
  std::vector<index_t> bounds(2 * n, 0);
  if (a.me == root) {
    const index_t* first = batch.first_idx().data();
    const std::vector<index_t> elements =
        detail::balanced_boundaries(first, batch.batch_size(), a.size);
    for (std::size_t k = 0; k < n; ++k) {
      bounds[k] = elements[k];
      bounds[n + k] = first[elements[k]];
    }
  }
  detail::check_mpi(MPI_Bcast(bounds.data(), static_cast<int>(2 * n), MPI_INT64_T, root, comm),
                    function, "MPI_Bcast");
  std::vector<index_t> elements(static_cast<std::size_t>(a.size)), rows(elements.size());
  for (std::size_t k = 0; k < elements.size(); ++k) {
    elements[k] = bounds[k + 1] - bounds[k];
    rows[k] = bounds[n + k + 1] - bounds[n + k];
  }
  const index_t columns = a.element_rank - 1;
  const detail::Displacements by_element =
      detail::displacements(elements, columns > 0, function, "elements");
  const detail::Displacements by_row =
      detail::displacements(rows, a.last_dim > 0, function, "rows");
  detail::check_widths(a, columns, by_element, by_row, function);
  const auto me = static_cast<std::size_t>(a.me);
  Tensor<index_t> shapes = Tensor<index_t>::empty(Shape{elements[me], columns});
  Tensor<T> data = Tensor<T>::empty(Shape{rows[me], a.last_dim});
  const bool is_root = a.me == root;
  detail::distribute_rows(comm, root, a, is_root ? &batch.shape_per_tensor() : nullptr, shapes,
                          columns, by_element, function);
  detail::distribute_rows(comm, root, a, is_root ? &batch.data() : nullptr, data, a.last_dim,
                          by_row, function);
  return detail::assemble(std::move(data), shapes, function);
}

/// All-gathers the ranks' padded batches and re-pads the global batch to the global maximum
/// shape: per dim, the largest padded size (max_shape()) of any rank whose elements have the
/// global rank, so each element keeps its shape and a max_shape the ranks agreed on is kept.
/// Padding is `padding_value` (a PaddedBatch does not record its own). Errors as for packed
/// batches.
template <Element T>
PaddedBatch<T> allgather(MPI_Comm comm, const PaddedBatch<T>& local,
                         std::type_identity_t<T> padding_value = T(0)) {
  constexpr const char* function = "mpi::allgather";
  const PackedBatch<T> packed = to_packed(local);
  const detail::Agreement a =
      detail::agree<T>(comm, detail::Collective::allgather_padded, function, packed.element_rank(),
                       packed.last_dim(), packed.batch_size(), packed.data().size(0), -1,
                       detail::no_argument_checks);
  const PackedBatch<T> global = detail::collect_packed(comm, -1, a, packed, function);
  const index_t columns = a.element_rank - 1;
  std::vector<index_t> max_shape(static_cast<std::size_t>(columns), 0);
  if (columns > 0) {
    std::vector<index_t> mine(static_cast<std::size_t>(columns), 0);
    if (local.element_rank() == a.element_rank) mine = local.max_shape().to_vector();
    const int count = detail::int_count(columns, function, "element rank - 1");
    std::vector<index_t> all(static_cast<std::size_t>(columns) * static_cast<std::size_t>(a.size));
    detail::check_mpi(
        MPI_Allgather(mine.data(), count, MPI_INT64_T, all.data(), count, MPI_INT64_T, comm),
        function, "MPI_Allgather");
    for (std::size_t i = 0; i < all.size(); ++i)
      max_shape[i % max_shape.size()] = std::max(max_shape[i % max_shape.size()], all[i]);
  }
  return to_padded(global, padding_value, max_shape);
}

}  // namespace tbatch::mpi
