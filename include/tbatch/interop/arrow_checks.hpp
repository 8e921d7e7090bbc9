#pragma once
// What the Arrow import trusts and checks. The specification lets the producer vouch for the
// size of each buffer (length + offset entries); everything else is checked before it is read:
// released structs, format strings, buffer and child counts, null buffers the specification
// forbids, lengths, offsets and their sums, list offsets that decrease or run past their child,
// and nulls where a tensor has no place for them.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/interop/arrow_abi.hpp"
#include "tbatch/interop/arrow_format.hpp"

namespace tbatch {
namespace arrow {

/// What import_batch makes of a null row (a null list or tensor).
enum class NullPolicy {
  /// A ValueError naming the row (the default).
  error,
  /// An empty element: no rows, the batch's last dim.
  empty,
};

}  // namespace arrow

namespace detail::arrowc {

/// An ArrowArray taken from its producer: its release callback runs exactly once, when the
/// last tensor over its memory is gone (or when the import fails).
struct TakenArray {
  ArrowArray array{};
  TakenArray() = default;
  TakenArray(const TakenArray&) = delete;
  TakenArray& operator=(const TakenArray&) = delete;
  ~TakenArray() {
    if (array.release != nullptr) array.release(&array);
  }
};

/// Moves `*source` into a TakenArray and marks `*source` released, as the specification's
/// "moving an array" asks. ValueError for a null or already released array (nothing taken).
inline std::shared_ptr<TakenArray> take_array(ArrowArray* source, const char* function) {
  if (source == nullptr) fail<ValueError>(function, {"the ArrowArray is null"});
  if (source->release == nullptr)
    fail<ValueError>(function, {"the ArrowArray is released (its release callback is null)"});
  auto taken = std::make_shared<TakenArray>();
  taken->array = *source;
  source->release = nullptr;
  return taken;
}

enum class Kind {
  primitive,
  list,
  large_list,
  list_view,
  large_list_view,
  fixed_size_list,
  struct_
};

/// A schema node's type, read from its format string.
struct TypeInfo {
  Kind kind = Kind::primitive;
  DType dtype = DType::float32;  // primitive only
  index_t list_size = 0;         // fixed_size_list only
  bool is_list() const { return kind >= Kind::list && kind <= Kind::large_list_view; }
  bool is_view() const { return kind == Kind::list_view || kind == Kind::large_list_view; }
  bool is_large() const { return kind == Kind::large_list || kind == Kind::large_list_view; }
};

/// The type of schema node `schema` (`where` names it in errors). ValueError for a null or
/// malformed node; TypeError for a format tbatch does not read (dictionaries included).
inline TypeInfo parse_type(const ArrowSchema* schema, const char* function,
                           std::string_view where) {
  if (schema == nullptr) fail<ValueError>(function, {where, "'s ArrowSchema is null"});
  if (schema->release == nullptr)
    fail<ValueError>(function,
                     {where, "'s ArrowSchema is released (its release callback is null)"});
  if (schema->format == nullptr) fail<ValueError>(function, {where, "'s format string is null"});
  if (schema->dictionary != nullptr)
    fail<TypeError>(function, {where, " is dictionary-encoded; tbatch reads plain values only"});
  if (schema->n_children < 0 || (schema->n_children > 0 && schema->children == nullptr))
    fail<ValueError>(function, {where, " has n_children ", schema->n_children,
                                schema->n_children < 0 ? "" : " but null children"});
  for (int64_t i = 0; i < schema->n_children; ++i)
    if (schema->children[i] == nullptr)
      fail<ValueError>(function, {where, "'s child ", i, " is null"});
  const std::string_view format = schema->format;
  TypeInfo type;
  int64_t children = 1;
  if (format == "+l" || format == "+L" || format == "+vl" || format == "+vL") {
    type.kind = format == "+l"    ? Kind::list
                : format == "+L"  ? Kind::large_list
                : format == "+vl" ? Kind::list_view
                                  : Kind::large_list_view;
  } else if (format.starts_with("+w:") && format.size() > 3 && format.size() <= 13 &&
             format.find_first_not_of("0123456789", 3) == std::string_view::npos) {
    type.kind = Kind::fixed_size_list;
    for (char c : format.substr(3))
      type.list_size = type.list_size * 10 + (c - '0');
    if (type.list_size > 2147483647)
      fail<ValueError>(function, {where, " has format \"", format, "\": the size passes int32"});
  } else if (format == "+s") {
    type.kind = Kind::struct_;
    children = schema->n_children;
  } else if (auto dtype = dtype_of_format(format)) {
    type.dtype = *dtype;
    children = 0;
  } else {
    fail<TypeError>(function,
                    {where, " has format \"", format,
                     "\"; tbatch reads list, large_list, list_view, large_list_view, "
                     "fixed_size_list, struct (variable_shape_tensor) and the primitive formats "
                     "b c C s S i I l e f g"});
  }
  if (schema->n_children != children)
    fail<ValueError>(function, {where, " (format \"", format, "\") has ", schema->n_children,
                                " children; expected ", children});
  return type;
}

/// Checks the fields of array node `a` (`where` names it) against its type's counts.
inline void check_node(const ArrowArray* a, int64_t buffers, int64_t children, const char* function,
                       std::string_view where) {
  if (a == nullptr) fail<ValueError>(function, {where, "'s ArrowArray is null"});
  if (a->release == nullptr)
    fail<ValueError>(function, {where, "'s ArrowArray is released (its release callback is null)"});
  index_t end = 0;
  if (a->length < 0 || a->offset < 0 || add_overflows(a->length, a->offset, end))
    fail<ValueError>(function, {where, " has length ", a->length, " and offset ", a->offset,
                                "; expected both >= 0 with a sum that fits int64"});
  if (a->null_count < -1 || a->null_count > a->length)
    fail<ValueError>(function,
                     {where, " has null_count ", a->null_count, "; expected -1 to ", a->length});
  if (a->n_buffers != buffers || (buffers > 0 && a->buffers == nullptr))
    fail<ValueError>(
        function, {where, " has ", a->n_buffers, " buffers",
                   a->n_buffers == buffers ? " in a null array" : "", "; its type has ", buffers});
  if (a->n_children != children || (children > 0 && a->children == nullptr))
    fail<ValueError>(function, {where, " has ", a->n_children, " children",
                                a->n_children == children ? " in a null array" : "",
                                "; its type has ", children});
  for (int64_t i = 0; i < children; ++i)
    if (a->children[i] == nullptr) fail<ValueError>(function, {where, "'s child ", i, " is null"});
  if (a->dictionary != nullptr)
    fail<ValueError>(function, {where, " has a dictionary but its type is not dictionary-encoded"});
}

/// The first null among entries [first, first + count) of `a` (logical indices), or -1.
/// ValueError when null_count says there are nulls but the validity bitmap is null.
inline index_t first_null(const ArrowArray* a, index_t first, index_t count, const char* function,
                          std::string_view where) {
  if (a->null_count == 0 || count == 0) return -1;
  const auto* bits = static_cast<const std::uint8_t*>(a->buffers[0]);
  if (bits == nullptr) {
    if (a->null_count > 0)
      fail<ValueError>(function,
                       {where, " has null_count ", a->null_count, " but a null validity bitmap"});
    return -1;
  }
  for (index_t i = 0; i < count; ++i) {
    const index_t bit = a->offset + first + i;
    if (bit % 8 == 0 && i + 8 <= count && bits[bit / 8] == 0xFF) {
      i += 7;  // a whole byte of valid entries
      continue;
    }
    if (((bits[bit / 8] >> (bit % 8)) & 1) == 0) return first + i;
  }
  return -1;
}

/// The fixed_size_list levels and the primitive values below a list (or a dense array's top).
struct ValueChain {
  std::vector<const ArrowArray*> arrays;  // each fixed_size_list level, then the values
  std::vector<index_t> sizes;             // the fixed_size_list sizes
  DType dtype = DType::float32;
};

inline ValueChain value_chain(const ArrowSchema* schema, const ArrowArray* array,
                              const char* function, std::string where) {
  ValueChain chain;
  for (;;) {
    const TypeInfo type = parse_type(schema, function, where);
    if (type.kind == Kind::primitive) {
      check_node(array, 2, 0, function, where);
      chain.arrays.push_back(array);
      chain.dtype = type.dtype;
      return chain;
    }
    if (type.kind != Kind::fixed_size_list)
      fail<TypeError>(function, {where, " has format \"", schema->format,
                                 "\"; expected fixed_size_list or primitive values here"});
    check_node(array, 1, 1, function, where);
    chain.arrays.push_back(array);
    chain.sizes.push_back(type.list_size);
    schema = schema->children[0];
    array = array->children[0];
    where += "'s child";
  }
}

/// Where the values of entries [first, first + count) of the chain's top level start in the
/// values buffer (a physical index), after checking every level's bounds and nulls. `row` names
/// the row in errors (-1: the whole array).
inline std::string row_name(index_t row) {
  return row < 0 ? std::string("the array") : "row " + std::to_string(row);
}

inline index_t chain_values(const ValueChain& chain, index_t first, index_t count, index_t row,
                            const char* function) {
  for (std::size_t level = 0;; ++level) {
    const ArrowArray* a = chain.arrays[level];
    index_t end = 0;
    if (add_overflows(first, count, end) || end > a->length)
      fail<ValueError>(function, {row_name(row), " needs ", count, " entries from entry ", first,
                                  " of level ", level, ", which has length ", a->length});
    if (const index_t null = first_null(a, first, count, function, "a values array"); null >= 0)
      fail<ValueError>(function, {row_name(row), " holds a null (entry ", null, " of level ", level,
                                  "); tbatch tensors hold no nulls"});
    const index_t physical = checked_add(a->offset, first, function);
    if (level == chain.sizes.size()) {
      index_t bytes = 0;  // byte addresses of the values: what the reads compute
      if (multiply_overflows(physical + count, dtype_size(chain.dtype), bytes))
        fail<ValueError>(function, {row_name(row), "'s values end at entry ", physical + count,
                                    " of the values buffer, past any addressable buffer"});
      if (count > 0 && a->buffers[1] == nullptr)
        fail<ValueError>(function,
                         {"the values buffer is null but ", row_name(row), " has values"});
      return physical;
    }
    first = checked_mul(physical, chain.sizes[level], function);
    count = checked_mul(count, chain.sizes[level], function);
  }
}

/// The rows of a list array: row r's entries [start[r], start[r] + count[r]) of its child, and
/// whether the non-empty ones follow each other (then the values are one range).
struct Segments {
  std::vector<index_t> start, count;
  bool contiguous = true;
};

/// Reads offset `i` of an int32 or int64 offsets buffer (unaligned reads allowed).
inline index_t read_offset(const void* buffer, index_t i, bool large) {
  if (large) {
    std::int64_t v;
    std::memcpy(&v, static_cast<const char*>(buffer) + i * 8, 8);
    return v;
  }
  std::int32_t v;
  std::memcpy(&v, static_cast<const char*>(buffer) + i * 4, 4);
  return v;
}

/// The segments of rows [first_row, first_row + rows) of list array `list` (checked with
/// check_node for its type); rows with `skip[r]` set are empty. ValueError for a null row not
/// skipped, a null offsets buffer, a negative start or size, or offsets that decrease.
inline Segments list_segments(const ArrowArray* list, TypeInfo type, index_t first_row,
                              index_t rows, const std::vector<bool>& skip, const char* function) {
  Segments s;
  s.start.assign(std::size_t(rows), 0);
  s.count.assign(std::size_t(rows), 0);
  const void* offsets = list->buffers[1];
  const void* sizes = type.is_view() ? list->buffers[2] : nullptr;
  index_t next = -1;  // where the next non-empty segment must start to keep the range whole
  for (index_t r = 0; r < rows; ++r) {
    if (skip[std::size_t(r)]) continue;
    if (first_null(list, first_row + r, 1, function, "the list array") >= 0)
      fail<ValueError>(function, {"row ", r, " of the list array is null"});
    if (offsets == nullptr || (type.is_view() && sizes == nullptr))
      fail<ValueError>(function, {"the list array's ", offsets == nullptr ? "offsets" : "sizes",
                                  " buffer is null but it has ", rows, " rows"});
    const index_t p = list->offset + first_row + r;  // checked by check_node and the caller
    const index_t start = read_offset(offsets, p, type.is_large());
    const index_t second = read_offset(type.is_view() ? sizes : offsets,
                                       p + (type.is_view() ? 0 : 1), type.is_large());
    index_t end = 0;
    const bool bad = type.is_view() ? start < 0 || second < 0 || add_overflows(start, second, end)
                                    : start < 0 || second < start;
    if (bad)
      fail<ValueError>(function, {"row ", r, " has offset ", start,
                                  type.is_view() ? " and size " : " and the next offset ", second,
                                  type.is_view() ? "; expected both >= 0 with a sum that fits int64"
                                                 : "; offsets must be >= 0 and must not decrease"});
    const index_t count = type.is_view() ? second : second - start;
    s.start[std::size_t(r)] = start;
    s.count[std::size_t(r)] = count;
    if (count == 0) continue;
    if (next >= 0 && start != next) s.contiguous = false;
    next = start + count;  // fits: checked above
  }
  return s;
}

/// Which rows [first, first + rows) of `a` are null.
inline std::vector<bool> null_rows(const ArrowArray* a, index_t first, index_t rows,
                                   const char* function, std::string_view where) {
  std::vector<bool> nulls(std::size_t(rows), false);
  for (index_t r = first_null(a, first, rows, function, where); r >= 0;
       r = first_null(a, r + 1, first + rows - r - 1, function, where))
    nulls[std::size_t(r - first)] = true;
  return nulls;
}

}  // namespace detail::arrowc
}  // namespace tbatch
