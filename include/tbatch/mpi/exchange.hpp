#pragma once
// The all-to-all exchange of a packed batch's elements, each to the rank a destination list
// names: the counts first, then the shape rows, then the data rows, from send buffers that hold
// each destination's elements contiguously (the batch itself when it already does).

#include <mpi.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/mpi/agreement.hpp"
#include "tbatch/mpi/balance.hpp"
#include "tbatch/mpi/config.hpp"
#include "tbatch/mpi/datatype.hpp"
#include "tbatch/mpi/transfer.hpp"
#include "tbatch/tensor/tensor.hpp"

#if TBATCH_MPI_DEFINITIONS
#include <algorithm>
#include <climits>
#endif

namespace tbatch::mpi::detail {

/// Each element's row count (what the collectives send per element), from the batch geometry.
template <class T>
std::vector<index_t> element_rows(const PackedBatch<T>& batch) {
  const tbatch::detail::BatchGeometry geometry = tbatch::detail::geometry_of(batch);
  std::vector<index_t> rows(static_cast<std::size_t>(batch.batch_size()));
  for (index_t i = 0; i < batch.batch_size(); ++i)
    rows[static_cast<std::size_t>(i)] = geometry.rows(i);
  return rows;
}

/// Elements and rows this rank receives from each rank.
struct Receipts {
  std::vector<index_t> elements, rows;
};

/// One MPI_Alltoallv of rows of type `row` from `send` (grouped by destination) into `out`.
TBATCH_INLINE void exchange_rows(MPI_Comm comm, const void* send, const Displacements& sent,
                                 const Displacements& received, const Datatype& row, void* out,
                                 const char* function);

/// What an exchange settles before the data rows move, the same for every dtype: where each
/// element goes, what each rank receives, and the received shape rows.
struct ExchangePlan {
  SendPlan plan;
  Receipts in;
  Displacements send_by_row, receive_by_row;
  Tensor<index_t> shapes;
};

/// The counts and shape rows of sending element i (of rows[i] rows; shape row i of
/// `local_shapes`) to rank destination[i], with the int limits checked before the rows move.
TBATCH_INLINE ExchangePlan exchange_metadata(MPI_Comm comm, const Agreement& a,
                                             const std::vector<index_t>& rows,
                                             const Tensor<index_t>& local_shapes,
                                             const std::vector<int>& destination,
                                             const char* function);

/// True on every rank when every rank can send its rows straight from the batch:
/// MPI_Alltoallw takes byte displacements as int, so neither the batch's row offsets nor the
/// received bytes may exceed INT_MAX anywhere.
TBATCH_INLINE bool direct_everywhere(MPI_Comm comm, index_t local_rows, index_t received_rows,
                                     index_t row_bytes, const char* function);

/// Each destination's rows straight from the batch (`rows`, contiguous; offsets `first_idx`):
/// one indexed type per destination, consecutive elements merged, no packing copy.
TBATCH_INLINE void send_rows_direct(MPI_Comm comm, const void* rows, const index_t* first_idx,
                                    const std::vector<int>& destination, const Receipts& in,
                                    const Displacements& receive, const Datatype& row,
                                    index_t row_bytes, void* data, const char* function);

/// The rows packed by destination (unless already in order), then one MPI_Alltoallv with row
/// displacements.
template <class T>
void send_rows_packed(MPI_Comm comm, const PackedBatch<T>& local, const Tensor<T>& rows,
                      const SendPlan& plan, const Displacements& send, const Displacements& receive,
                      const Datatype& row, Tensor<T>& data, const char* function) {
  Tensor<T> grouped = rows;
  if (!plan.in_order) {
    grouped = Tensor<T>::empty(Shape{rows.size(0), rows.size(1)});
    for (std::size_t i = 0; i < plan.row_at.size(); ++i) {
      const Tensor<T> element = local.element(static_cast<index_t>(i));
      copy(element.view(), grouped.narrow(0, plan.row_at[i], element.size(0)).view());
    }
  }
  exchange_rows(comm, grouped.data(), send, receive, row, data.data(), function);
}

/// Sends element i of `local` to rank destination[i] (checked) and returns what this rank
/// receives, in (source rank, source position) order: one MPI_Alltoall of the counts, then the
/// shape rows and the data rows (direct from the batch when the offsets fit MPI's ints).
template <class T>
PackedBatch<T> exchange(MPI_Comm comm, const Agreement& a, const PackedBatch<T>& local,
                        const std::vector<int>& destination, const char* function) {
  const Tensor<index_t> first_idx = local.first_idx().contiguous();
  const ExchangePlan x = exchange_metadata(comm, a, element_rows(local), local.shape_per_tensor(),
                                           destination, function);
  Tensor<T> data = Tensor<T>::empty(Shape{x.receive_by_row.total, a.last_dim});
  if (a.last_dim == 0) return assemble(std::move(data), x.shapes, function);

  const Datatype row = row_type(dtype_of<T>, a.last_dim, function);
  const Tensor<T> rows = local.data().contiguous();
  const index_t row_bytes = a.last_dim * index_t(sizeof(T));
  if (direct_everywhere(comm, rows.size(0), x.receive_by_row.total, row_bytes, function))
    send_rows_direct(comm, rows.data(), first_idx.data(), destination, x.in, x.receive_by_row, row,
                     row_bytes, data.data(), function);
  else
    send_rows_packed(comm, local, rows, x.plan, x.send_by_row, x.receive_by_row, row, data,
                     function);
  return assemble(std::move(data), x.shapes, function);
}

/// Every rank's per-element row counts (`mine`: this rank's), in global order (rank 0's
/// elements first).
TBATCH_INLINE std::vector<index_t> global_rows(MPI_Comm comm, const Agreement& a,
                                               const std::vector<index_t>& mine,
                                               const char* function);

#if TBATCH_MPI_DEFINITIONS

// One MPI_Alltoall of the (elements, rows) pairs each rank sends to each.
TBATCH_INLINE Receipts exchange_counts(MPI_Comm comm, const SendPlan& plan, int size,
                                       const char* function) {
  std::vector<index_t> send(2 * std::size_t(size)), receive(2 * std::size_t(size));
  for (std::size_t r = 0; r < std::size_t(size); ++r) {
    send[2 * r] = plan.elements[r];
    send[2 * r + 1] = plan.rows[r];
  }
  check_mpi(MPI_Alltoall(send.data(), 2, MPI_INT64_T, receive.data(), 2, MPI_INT64_T, comm),
            function, "MPI_Alltoall");
  Receipts in{std::vector<index_t>(std::size_t(size)), std::vector<index_t>(std::size_t(size))};
  for (std::size_t r = 0; r < std::size_t(size); ++r) {
    in.elements[r] = receive[2 * r];
    in.rows[r] = receive[2 * r + 1];
  }
  return in;
}

TBATCH_INLINE void exchange_rows(MPI_Comm comm, const void* send, const Displacements& sent,
                                 const Displacements& received, const Datatype& row, void* out,
                                 const char* function) {
  check_mpi(MPI_Alltoallv(send, sent.counts.data(), sent.displs.data(), row.get(), out,
                          received.counts.data(), received.displs.data(), row.get(), comm),
            function, "MPI_Alltoallv");
}

// The shape rows, grouped by destination (reordered when the plan is not in order), into
// `shapes`; nothing is sent for rank-1 elements (no shape columns), the same on every rank.
TBATCH_INLINE void exchange_shapes(MPI_Comm comm, const Tensor<index_t>& local_shapes,
                                   const SendPlan& plan, const Displacements& send,
                                   const Displacements& receive, Tensor<index_t>& shapes,
                                   index_t columns, const char* function) {
  if (columns == 0) return;
  Tensor<index_t> grouped = local_shapes;
  if (!plan.in_order) {
    grouped = Tensor<index_t>::empty(Shape{local_shapes.size(0), columns});
    for (std::size_t i = 0; i < plan.element_at.size(); ++i)
      copy(local_shapes.narrow(0, index_t(i), 1).view(),
           grouped.narrow(0, plan.element_at[i], 1).view());
  }
  const Datatype row = row_type(dtype_of<index_t>, columns, function);
  const Tensor<index_t> dense = grouped.contiguous();
  exchange_rows(comm, dense.data(), send, receive, row, shapes.data(), function);
}

TBATCH_INLINE ExchangePlan exchange_metadata(MPI_Comm comm, const Agreement& a,
                                             const std::vector<index_t>& rows,
                                             const Tensor<index_t>& local_shapes,
                                             const std::vector<int>& destination,
                                             const char* function) {
  const index_t columns = a.element_rank - 1;
  ExchangePlan x;
  x.plan = plan_sends(rows, destination, a.size);
  x.in = exchange_counts(comm, x.plan, a.size, function);
  const Displacements send_by_element =
      displacements(x.plan.elements, columns > 0, function, "elements");
  x.send_by_row = displacements(x.plan.rows, a.last_dim > 0, function, "rows");
  const Displacements receive_by_element =
      displacements(x.in.elements, columns > 0, function, "elements");
  x.receive_by_row = displacements(x.in.rows, a.last_dim > 0, function, "rows");
  if (columns > 0) int_count(columns, function, "the element rank - 1");
  if (a.last_dim > 0) int_count(a.last_dim, function, "the last dim");
  x.shapes = Tensor<index_t>::empty(Shape{receive_by_element.total, columns});
  exchange_shapes(comm, local_shapes, x.plan, send_by_element, receive_by_element, x.shapes,
                  columns, function);
  return x;
}

TBATCH_INLINE bool direct_everywhere(MPI_Comm comm, index_t local_rows, index_t received_rows,
                                     index_t row_bytes, const char* function) {
  const bool direct =
      local_rows <= INT_MAX && received_rows <= INT_MAX / std::max<index_t>(row_bytes, 1);
  int everywhere = direct ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, comm), function,
            "MPI_Allreduce");
  return everywhere != 0;
}

TBATCH_INLINE void send_rows_direct(MPI_Comm comm, const void* rows, const index_t* first_idx,
                                    const std::vector<int>& destination, const Receipts& in,
                                    const Displacements& receive, const Datatype& row,
                                    index_t row_bytes, void* data, const char* function) {
  const auto size = in.rows.size();
  const RowRuns runs = destination_runs(first_idx, destination, int(size));
  std::vector<Datatype> owned;
  owned.reserve(size);
  std::vector<MPI_Datatype> send_types(size, row.get()), receive_types(size, row.get());
  std::vector<int> send_w(size, 0), send_at(size, 0), receive_w(size, 0), receive_at(size, 0);
  for (std::size_t k = 0; k < size; ++k) {
    if (!runs.starts[k].empty()) {
      MPI_Datatype type = MPI_DATATYPE_NULL;
      check_mpi(MPI_Type_indexed(int(runs.starts[k].size()), runs.lengths[k].data(),
                                 runs.starts[k].data(), row.get(), &type),
                function, "MPI_Type_indexed");
      owned.push_back(commit_owned(type, function));
      send_types[k] = owned.back().get();
      send_w[k] = 1;
    }
    receive_w[k] = int(in.rows[k]);
    receive_at[k] = int(receive.displs[k] * row_bytes);
  }
  check_mpi(MPI_Alltoallw(rows, send_w.data(), send_at.data(), send_types.data(), data,
                          receive_w.data(), receive_at.data(), receive_types.data(), comm),
            function, "MPI_Alltoallw");
}

TBATCH_INLINE std::vector<index_t> global_rows(MPI_Comm comm, const Agreement& a,
                                               const std::vector<index_t>& mine,
                                               const char* function) {
  const Displacements by_element =
      displacements(per_rank(a, &Descriptor::batch), true, function, "elements");
  std::vector<index_t> rows(std::size_t(by_element.total));
  std::copy(mine.begin(), mine.end(), rows.begin() + by_element.displs[std::size_t(a.me)]);
  if (by_element.total > 0)
    check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows.data(),
                             by_element.counts.data(), by_element.displs.data(), MPI_INT64_T, comm),
              function, "MPI_Allgatherv");
  return rows;
}

#endif  // TBATCH_MPI_DEFINITIONS

}  // namespace tbatch::mpi::detail
