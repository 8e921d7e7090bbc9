#pragma once
// Distributed batching over MPI: all-gather, gather and balanced scatter of packed batches,
// all-gather of padded batches, and the all-to-all moves (by a rule, rebalancing, length
// bucketing), across the ranks of a communicator. Optional: it needs an MPI implementation
// (link tbatch::tbatch_mpi, or tbatch::mpi_compiled in compiled mode), so the umbrella tbatch.hpp
// does not include it. Every call agrees on a descriptor first (mpi/agreement.hpp), so the ranks
// throw the same error together.

#include <mpi.h>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/mpi/agreement.hpp"
#include "tbatch/mpi/balance.hpp"
#include "tbatch/mpi/config.hpp"
#include "tbatch/mpi/datatype.hpp"
#include "tbatch/mpi/exchange.hpp"
#include "tbatch/mpi/transfer.hpp"
#include "tbatch/tensor/tensor.hpp"

#if TBATCH_MPI_DEFINITIONS
#include <algorithm>
#endif

namespace tbatch::mpi::detail {

/// This rank's share of a scatter_balanced: its element and row counts, and every rank's
/// displacements of the shape rows and the data rows.
struct Split {
  index_t elements = 0, rows = 0;
  Displacements by_element, by_row;
};

/// The root splits its batch (`first_idx`, batch + 1 row offsets, read on root only) into
/// shares balanced by rows (balanced_boundaries) and tells every rank: the element bounds and
/// their row offsets in one MPI_Bcast. The widths are checked before anything is allocated.
TBATCH_INLINE Split split_at_root(MPI_Comm comm, int root, const Agreement& a,
                                  const index_t* first_idx, index_t batch, const char* function);

/// Per dim, the largest of every rank's `mine` (a padded batch's max_shape; empty when its
/// elements do not have the agreed rank, then it counts as zeros): one MPI_Allgather.
TBATCH_INLINE std::vector<index_t> global_max_shape(MPI_Comm comm, const Agreement& a,
                                                    std::vector<index_t> mine,
                                                    const char* function);

}  // namespace tbatch::mpi::detail

namespace tbatch::mpi {

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
  const detail::Agreement a = detail::agree(
      comm, detail::Collective::all_to_all, function, dtype_of<T>, local.element_rank(),
      local.last_dim(), local.batch_size(), local.data().size(0), -1, &destination);
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
  const detail::Agreement a = detail::agree(comm, detail::Collective::rebalance, function,
                                            dtype_of<T>, local.element_rank(), local.last_dim(),
                                            local.batch_size(), local.data().size(0), -1);
  const std::vector<index_t> rows =
      detail::global_rows(comm, a, detail::element_rows(local), function);
  const std::vector<int> share = detail::balanced_shares(rows, a.size, function);
  const std::vector<int> to =
      detail::local_part(detail::per_rank(a, &detail::Descriptor::batch), a.me, share);
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
  const detail::Agreement a = detail::agree(comm, detail::Collective::bucket_by_size, function,
                                            dtype_of<T>, local.element_rank(), local.last_dim(),
                                            local.batch_size(), local.data().size(0), -1);
  const std::vector<index_t> rows =
      detail::global_rows(comm, a, detail::element_rows(local), function);
  const detail::Buckets buckets = detail::buckets_by_size(rows, a.size, a.me, function);
  const std::vector<int> to =
      detail::local_part(detail::per_rank(a, &detail::Descriptor::batch), a.me, buckets.share);
  const PackedBatch<T> received = detail::exchange(comm, a, local, to, function);
  // Received in global order; this rank's share of the sorted order is what it wants.
  std::vector<Tensor<T>> ordered;
  for (const index_t position : buckets.order)
    ordered.push_back(received.element(position));
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
  const detail::Agreement a = detail::agree(comm, detail::Collective::allgather_packed, function,
                                            dtype_of<T>, local.element_rank(), local.last_dim(),
                                            local.batch_size(), local.data().size(0), -1);
  return detail::collect_packed(comm, -1, a, local, function);
}

/// Gathers the ranks' packed batches on `root`: the global batch there (as allgather), and on
/// every other rank an empty batch with the global element rank and last dim. Every rank must
/// pass the same root (ValueError otherwise, IndexError when out of range); other errors as
/// allgather.
template <Element T>
PackedBatch<T> gather(MPI_Comm comm, int root, const PackedBatch<T>& local) {
  constexpr const char* function = "mpi::gather";
  const detail::Agreement a =
      detail::agree(comm, detail::Collective::gather, function, dtype_of<T>, local.element_rank(),
                    local.last_dim(), local.batch_size(), local.data().size(0), root);
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
  const detail::Agreement a = detail::agree(comm, detail::Collective::scatter_balanced, function,
                                            dtype_of<T>, batch.element_rank(), batch.last_dim(),
                                            batch.batch_size(), batch.data().size(0), root);
  const bool is_root = a.me == root;
  const detail::Split split = detail::split_at_root(
      comm, root, a, is_root ? batch.first_idx().data() : nullptr, batch.batch_size(), function);
  const index_t columns = a.element_rank - 1;
  Tensor<index_t> shapes = Tensor<index_t>::empty(Shape{split.elements, columns});
  Tensor<T> data = Tensor<T>::empty(Shape{split.rows, a.last_dim});
  detail::distribute_rows(comm, root, a, is_root ? &batch.shape_per_tensor() : nullptr, shapes,
                          columns, split.by_element, function);
  detail::distribute_rows(comm, root, a, is_root ? &batch.data() : nullptr, data, a.last_dim,
                          split.by_row, function);
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
  const detail::Agreement a = detail::agree(comm, detail::Collective::allgather_padded, function,
                                            dtype_of<T>, packed.element_rank(), packed.last_dim(),
                                            packed.batch_size(), packed.data().size(0), -1);
  const PackedBatch<T> global = detail::collect_packed(comm, -1, a, packed, function);
  std::vector<index_t> mine;
  if (a.element_rank > 1 && local.element_rank() == a.element_rank)
    mine = local.max_shape().to_vector();
  return to_padded(global, padding_value,
                   detail::global_max_shape(comm, a, std::move(mine), function));
}

#if TBATCH_MPI_DEFINITIONS

namespace detail {

TBATCH_INLINE Split split_at_root(MPI_Comm comm, int root, const Agreement& a,
                                  const index_t* first_idx, index_t batch, const char* function) {
  const std::size_t n = static_cast<std::size_t>(a.size) + 1;
  std::vector<index_t> bounds(2 * n, 0);
  if (a.me == root) {
    const std::vector<index_t> elements = balanced_boundaries(first_idx, batch, a.size);
    for (std::size_t k = 0; k < n; ++k) {
      bounds[k] = elements[k];
      bounds[n + k] = first_idx[elements[k]];
    }
  }
  check_mpi(MPI_Bcast(bounds.data(), static_cast<int>(2 * n), MPI_INT64_T, root, comm), function,
            "MPI_Bcast");
  std::vector<index_t> elements(static_cast<std::size_t>(a.size)), rows(elements.size());
  for (std::size_t k = 0; k < elements.size(); ++k) {
    elements[k] = bounds[k + 1] - bounds[k];
    rows[k] = bounds[n + k + 1] - bounds[n + k];
  }
  const index_t columns = a.element_rank - 1;
  Split split;
  split.by_element = displacements(elements, columns > 0, function, "elements");
  split.by_row = displacements(rows, a.last_dim > 0, function, "rows");
  check_widths(a, columns, split.by_element, split.by_row, function);
  split.elements = elements[static_cast<std::size_t>(a.me)];
  split.rows = rows[static_cast<std::size_t>(a.me)];
  return split;
}

TBATCH_INLINE std::vector<index_t> global_max_shape(MPI_Comm comm, const Agreement& a,
                                                    std::vector<index_t> mine,
                                                    const char* function) {
  const index_t columns = a.element_rank - 1;
  std::vector<index_t> max_shape(static_cast<std::size_t>(columns), 0);
  if (columns > 0) {
    if (mine.empty()) mine.assign(static_cast<std::size_t>(columns), 0);
    const int count = int_count(columns, function, "element rank - 1");
    std::vector<index_t> all(static_cast<std::size_t>(columns) * static_cast<std::size_t>(a.size));
    check_mpi(MPI_Allgather(mine.data(), count, MPI_INT64_T, all.data(), count, MPI_INT64_T, comm),
              function, "MPI_Allgather");
    for (std::size_t i = 0; i < all.size(); ++i)
      max_shape[i % max_shape.size()] = std::max(max_shape[i % max_shape.size()], all[i]);
  }
  return max_shape;
}

}  // namespace detail

#endif  // TBATCH_MPI_DEFINITIONS

}  // namespace tbatch::mpi
