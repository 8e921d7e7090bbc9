#pragma once
// TensorDict: a dictionary of tensors of any dtype, and of nested TensorDicts, that share their
// leading batch dims. Its shape ops are the view layer's layout functions applied to the batch
// dims of every entry, and its indexing is detail::plan_index over every entry's batch dims.
// Longer members are defined by concern in the dict/tensor_dict_*.hpp headers (dict/tensor_dict.hpp
// includes them all).

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/indexing.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

class TensorDict;
class RaggedTensorDict;

/// How TensorDict::stack_ragged stores the entries whose shapes differ between the TensorDicts
/// it stacks.
enum class RaggedLayout { padded, packed };

namespace detail {

/// Owns a nested TensorDict; copies deep-copy the structure (the tensors still share buffers).
class DictBox {
 public:
  explicit DictBox(TensorDict dict);
  DictBox(const DictBox& other);
  DictBox(DictBox&& other) noexcept;
  DictBox& operator=(const DictBox& other);
  DictBox& operator=(DictBox&& other) noexcept;
  ~DictBox();

  TensorDict& get() { return *dict_; }
  const TensorDict& get() const { return *dict_; }

 private:
  std::unique_ptr<TensorDict> dict_;
};

TBATCH_INLINE bool starts_with(const Shape& shape, const Shape& prefix);

}  // namespace detail

/// A dictionary of tensors (any of the twelve dtypes) and nested TensorDicts whose leading dims
/// all equal batch_size(). Copying a TensorDict copies its keys and structure; the tensors share
/// their buffers, as Tensor copies do, and clone() copies the data.
class TensorDict {
 public:
  using Names = std::vector<std::optional<std::string>>;

  /// An entry value: any Tensor<T>, an AnyTensor, or a nested TensorDict.
  class Value {
   public:
    template <Element T>
    Value(Tensor<T> tensor) : value_(std::in_place_index<0>, std::move(tensor)) {}
    Value(const AnyTensor& tensor) : value_(tensor) {}
    Value(AnyTensor&& tensor) : value_(std::move(tensor)) {}
    Value(TensorDict dict);

    bool is_tensor() const { return value_.index() == 0; }
    bool is_dict() const { return value_.index() == 1; }
    const AnyTensor& tensor() const { return std::get<0>(value_); }
    AnyTensor& tensor() { return std::get<0>(value_); }
    const TensorDict& dict() const { return std::get<1>(value_).get(); }
    TensorDict& dict() { return std::get<1>(value_).get(); }

   private:
    std::variant<AnyTensor, detail::DictBox> value_;
  };
  using Item = std::pair<std::string, Value>;

  /// Walks the first batch dim: each step is the TensorDict of one batch element (a view).
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = TensorDict;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = TensorDict;

    Iterator() = default;
    TensorDict operator*() const { return dict_->index({position_}); }
    Iterator& operator++() {
      ++position_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++position_;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) {
      return a.dict_ == b.dict_ && a.position_ == b.position_;
    }

   private:
    friend class TensorDict;
    Iterator(const TensorDict* dict, index_t position) : dict_(dict), position_(position) {}
    const TensorDict* dict_ = nullptr;
    index_t position_ = 0;
  };

  // ---------------------------------------------------------------- construction

  /// No entries, batch_size {} (never inferred: see auto_batch_size_).
  TensorDict() = default;
  /// No entries; one name (or std::nullopt) per batch dim, or none at all for no names.
  TBATCH_INLINE explicit TensorDict(Shape batch_size, Names names = {});
  /// Entries {{"key", tensor or TensorDict}, ...}, each checked against `batch_size`.
  TBATCH_INLINE TensorDict(std::initializer_list<Item> items, Shape batch_size = {},
                           Names names = {});

  // ---------------------------------------------------------------- batch size

  const Shape& batch_size() const { return batch_size_; }
  /// Same as batch_size() (Python's td.shape).
  const Shape& shape() const { return batch_size_; }
  index_t batch_dims() const { return static_cast<index_t>(batch_size_.size()); }
  /// Same as batch_dims() (Python's td.dim()).
  index_t dim() const { return batch_dims(); }
  /// Number of batch elements (1 for batch_size {}), not the number of values in the tensors.
  index_t numel() const { return batch_size_.numel(); }
  /// Size of the first batch dim, 0 when there is none (Python's len(td)).
  index_t size() const { return batch_size_.empty() ? 0 : batch_size_[0]; }
  /// Size of batch dim `dim` (negative counts from the end).
  index_t size(index_t dim) const {
    return batch_size_[normalize_dim(dim, batch_dims(), "TensorDict::size")];
  }

  /// A new batch size every entry is compatible with ({} always is). ShapeError naming the
  /// first entry that is not. Names of kept dims stay; new dims have none.
  void set_batch_size(Shape batch_size);

  /// Sets the batch size to the longest leading dims all entries share (nested TensorDicts
  /// first get their own longest batch size), at most `batch_dims` dims. A TensorDict without
  /// entries keeps its batch size (cut to `batch_dims`).
  TensorDict& auto_batch_size_(std::optional<index_t> batch_dims = std::nullopt);

  // ---------------------------------------------------------------- entries

  /// Stores `value` (sharing its buffer) at `key`; a nested key creates missing intermediate
  /// TensorDicts. ShapeError when the value's leading dims are not the batch size.
  template <Element T>
  void set(const NestedKey& key, Tensor<T> value) {
    set_tensor(key, AnyTensor(std::move(value)), "TensorDict::set");
  }
  void set(const NestedKey& key, AnyTensor value) {
    set_tensor(key, std::move(value), "TensorDict::set");
  }
  /// Stores a nested TensorDict, whose batch size must start with this one's; it takes this
  /// TensorDict's names for the shared dims.
  void set(const NestedKey& key, TensorDict value) {
    set_dict(key, std::move(value), "TensorDict::set");
  }
  /// Stores a nested TensorDict made of `items` with the batch size of its parent (Python's
  /// `td["target"] = {"joints": ...}`).
  TBATCH_INLINE void set(const NestedKey& key, std::initializer_list<Item> items);

  /// The tensor at `key` (sharing its buffer). KeyError when missing, TypeError when it is a
  /// nested TensorDict or has another dtype.
  template <Element T>
  Tensor<T> get(const NestedKey& key) const {
    const char* fn = "TensorDict::get";
    const AnyTensor& tensor = tensor_at(key, fn);
    if (tensor.holds<T>()) return tensor.get<T>(fn);
    detail::fail<TypeError>(fn, {"entry ", key, " has dtype ", tensor.dtype(),
                                 ", not the requested ", dtype_name_of<T>});
  }
  /// The tensor at `key` whatever its dtype.
  AnyTensor get_any(const NestedKey& key) const { return tensor_at(key, "TensorDict::get_any"); }
  /// The nested TensorDict at `key` (a copy of its structure sharing the tensors).
  TBATCH_INLINE TensorDict get_dict(const NestedKey& key) const;
  /// True when `key` (a top-level key, or a path into nested TensorDicts) is present.
  TBATCH_INLINE bool contains(const NestedKey& key) const;
  /// True when the entry at `key` is a nested TensorDict; KeyError when missing.
  bool is_dict(const NestedKey& key) const {
    return lookup_or_throw(key, "TensorDict::is_dict").is_dict();
  }
  /// Top-level keys in insertion order.
  TBATCH_INLINE std::vector<std::string> keys() const;
  /// Keys as paths; include_nested walks into nested TensorDicts (depth first), leaves_only
  /// skips the nested TensorDicts themselves.
  TBATCH_INLINE std::vector<NestedKey> keys(bool include_nested, bool leaves_only = false) const;
  /// Removes `key`; KeyError when missing or when its TensorDict is locked.
  void erase(const NestedKey& key);
  /// A TensorDict with only `keys` (paths keep the nested TensorDicts on the way, with only the
  /// selected entries), in this TensorDict's key order. KeyError for a missing key if strict.
  TensorDict select(const std::vector<NestedKey>& keys, bool strict = true) const;
  /// A TensorDict without `keys` (missing keys are ignored).
  TensorDict exclude(const std::vector<NestedKey>& keys) const;
  /// Sets every entry of `other` (merging into nested TensorDicts present in both). All or
  /// nothing: on an error this TensorDict is unchanged.
  TBATCH_INLINE TensorDict& update(const TensorDict& other);
  /// True when there are no tensors (nested TensorDicts without tensors count as empty).
  TBATCH_INLINE bool is_empty() const;

  /// A locked TensorDict (and its nested ones) keeps its full key set, nested keys included:
  /// adding or removing a key, replacing a tensor by a TensorDict or the reverse, or a nested
  /// TensorDict by one of other keys is a KeyError. Tensors can still be replaced and written.
  TensorDict& lock_() {
    set_locked(true);
    return *this;
  }
  TensorDict& unlock_() {
    set_locked(false);
    return *this;
  }
  bool is_locked() const { return locked_; }

  // ---------------------------------------------------------------- indexing

  /// Indexes the batch dims of every entry at once: integers, Slice, Ellipsis and NewAxis give
  /// views of the entries, index tensors and boolean masks (over leading batch dims) copies.
  /// The result's batch size is the indexed batch shape; feature dims are untouched. IndexError
  /// when batch_dims() == 0, for an index out of range, too many indices (more than the batch
  /// dims) or a mask of the wrong shape.
  TensorDict index(std::initializer_list<TensorIndex> indices) const;

  /// Writes the entries of `value`, a TensorDict with the indexed batch size, into the indexed
  /// batch elements of the same keys (keys of this TensorDict absent from `value` are left
  /// alone). Writing into a TensorDict without entries first creates zero-filled entries shaped
  /// like the value's (lazy pre-allocation). Checks everything before writing anything:
  /// IndexError as for index(); ShapeError when value's batch size is not the indexed one;
  /// KeyError for a key of value missing here; TypeError for a dtype that differs; ValueError
  /// when an indexed entry is an expanded (broadcast) view.
  void index_put(std::initializer_list<TensorIndex> indices, const TensorDict& value);
  /// Writes `value`, broadcast to each entry's indexed shape and converted to its dtype, into
  /// every tensor. ValueError when an element does not fit an entry's dtype.
  template <Element T>
  void index_put(std::initializer_list<TensorIndex> indices, const Tensor<T>& value);
  /// Sets the indexed batch elements of every tensor to `value` (converted to each dtype).
  template <Element S>
  void index_put(std::initializer_list<TensorIndex> indices, S value) {
    index_put(indices, Tensor<S>(Shape{}, value));
  }

  // ---------------------------------------------------------------- shape ops over batch dims

  /// The batch dims reshaped to `sizes` (one -1 allowed): views where the strides allow, else
  /// copies. Names are erased. ShapeError when the element count differs.
  TensorDict reshape(const std::vector<index_t>& sizes) const;
  /// As reshape, but never copies: ShapeError naming the first entry that cannot be a view.
  TensorDict view(const std::vector<index_t>& sizes) const;
  /// Reorders the batch dims: batch dim i of the result is batch dim dims[i]. Views. ShapeError
  /// unless dims has batch_dims() entries; ValueError for a repeated dim; IndexError for a dim
  /// out of range.
  TensorDict permute(const std::vector<index_t>& dims) const;
  /// Swaps batch dims a and b. Views.
  TensorDict transpose(index_t a, index_t b) const;
  /// Inserts a batch dim of size 1 at `dim` (in [-batch_dims-1, batch_dims]), without a name.
  TensorDict unsqueeze(index_t dim) const;
  /// Removes every batch dim of size 1 (feature dims are never touched).
  TensorDict squeeze() const;
  /// Removes batch dim `dim` if its size is 1, else returns the same entries (as torch).
  TensorDict squeeze(index_t dim) const;
  /// Merges batch dims [start, end] into one (unnamed): views where possible, else copies.
  /// IndexError for a dim out of range or start after end.
  TensorDict flatten(index_t start = 0, index_t end = -1) const;
  /// Splits batch dim `dim` into `sizes` (one -1 allowed; the new dims have no names). Views.
  /// ShapeError for empty sizes or sizes whose product is not the dim's size.
  TensorDict unflatten(index_t dim, const std::vector<index_t>& sizes) const;
  /// One TensorDict per element of batch dim `dim`, which is removed. Views.
  std::vector<TensorDict> unbind(index_t dim = 0) const;
  /// Pieces of `size` batch elements along `dim` (the last may be shorter). Views. ValueError
  /// for size <= 0.
  std::vector<TensorDict> split(index_t size, index_t dim = 0) const;
  /// Consecutive pieces along `dim` with the given sizes, which must sum to its size (ValueError
  /// otherwise, or for a negative size). Views.
  std::vector<TensorDict> split(const std::vector<index_t>& sizes, index_t dim = 0) const;
  /// At most `chunks` pieces of ceil(size / chunks) batch elements along `dim`. Views.
  /// ValueError for chunks <= 0.
  std::vector<TensorDict> chunk(index_t chunks, index_t dim = 0) const;
  /// Broadcasts size-1 batch dims and prepends new leading batch dims (-1 keeps a size). Views
  /// whose repeated elements share memory: index_put into them is a ValueError; clone() first.
  /// ShapeError for fewer sizes than batch dims or a size that does not broadcast.
  TensorDict expand(const std::vector<index_t>& sizes) const;
  /// Tiles the batch dims `repeats` times (as torch.Tensor.repeat; extra leading repeats add
  /// batch dims). Always copies.
  TensorDict repeat(const std::vector<index_t>& repeats) const;
  /// Repeats each element of batch dim `dim` `repeats` times in place (as torch); without a dim
  /// the batch dims are flattened first. Always copies.
  TensorDict repeat_interleave(index_t repeats, std::optional<index_t> dim = std::nullopt) const;
  /// Repeats element i of batch dim `dim` repeats[i] times (`repeats`: one count per element,
  /// or a single count for all).
  TensorDict repeat_interleave(const Tensor<index_t>& repeats,
                               std::optional<index_t> dim = std::nullopt) const;
  /// tensordict's apply: a TensorDict of this one's keys, batch size and names holding fn(t) for
  /// every tensor t at any depth. fn takes `const Tensor<T>&` for the dtypes it handles (an
  /// overload set or a constrained generic lambda) or `const AnyTensor&`, and returns a Tensor
  /// or an AnyTensor. TypeError naming the entry when fn takes none of its dtype; ShapeError
  /// when a result's leading dims are not its TensorDict's batch size. Unlocked.
  ///   TensorDict scaled = td.apply([](const Tensor<float>& x) { return x * 2.f; });
  template <class Fn>
  TensorDict apply(Fn&& fn) const;
  /// Copies of every tensor (contiguous, sharing nothing with this TensorDict). Unlocked.
  TensorDict clone() const;
  /// Every tensor contiguous (shared when it already is).
  TensorDict contiguous() const;

  /// Stacks TensorDicts of equal batch sizes and keys along a new batch dim `dim` (copies):
  /// batch size [..., tds.size(), ...]. ValueError for an empty list or conflicting names;
  /// ShapeError for different batch sizes or entry shapes; KeyError for different keys;
  /// TypeError for different dtypes.
  static TensorDict stack(const std::vector<TensorDict>& tds, index_t dim = 0);
  /// Concatenates TensorDicts along existing batch dim `dim`; their batch sizes must match
  /// elsewhere and their keys and entry shapes (but dim) must agree (copies). The same errors as
  /// stack.
  static TensorDict cat(const std::vector<TensorDict>& tds, index_t dim = 0);

  /// Stacks TensorDicts whose entries may differ in shape along a new first batch dim
  /// (Python's lazy stack): entries of one shape in every TensorDict become dense tensors, the
  /// others a PaddedBatch or PackedBatch (`layout`) of the per-TensorDict tensors. Every
  /// TensorDict needs the same keys and batch_dims; a ragged entry needs one rank.
  static RaggedTensorDict stack_ragged(const std::vector<TensorDict>& tds,
                                       RaggedLayout layout = RaggedLayout::padded);

  // ---------------------------------------------------------------- names

  /// One name (or std::nullopt) per batch dim.
  const Names& names() const { return names_; }
  bool has_names() const {
    return std::any_of(names_.begin(), names_.end(), [](const auto& n) { return n.has_value(); });
  }
  /// Exactly one name (or std::nullopt) per batch dim (ValueError otherwise); names are unique.
  /// Nested TensorDicts take them for the shared dims.
  void set_names(Names names);
  void clear_names();
  /// Names the unnamed dims: `names` has one entry per batch dim, or fewer and one Ellipsis that
  /// keeps the existing names of the dims it stands for. A named dim can only keep its name.
  TensorDict refine_names(std::initializer_list<DimName> names) const;
  /// New names for all batch dims (an Ellipsis keeps the names of the dims it stands for).
  TensorDict rename(std::initializer_list<DimName> names) const;
  /// Renames dims by their current name: {{"agent", "robot"}} (std::nullopt removes a name).
  TensorDict rename(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& mapping) const;

  // ---------------------------------------------------------------- dict-like exceptions

  /// Iterates over the first batch dim; TypeError when batch_dims() == 0.
  TBATCH_INLINE Iterator begin() const;
  Iterator end() const { return Iterator(this, size()); }

  /// No conversion to bool, so that a comparison cannot pass as a condition by accident: reduce
  /// a comparison with all() or any(), test for keys with keys().empty().
  explicit operator bool() const = delete;

  /// True when every element of every tensor is non-zero (true without tensors).
  bool all() const;
  /// True when some element of some tensor is non-zero.
  bool any() const;

  /// Element-wise comparison of every entry: a TensorDict of Tensor<bool> with the same keys.
  /// KeyError when the keys differ, TypeError / ShapeError when an entry's dtype or shape does.
  friend TensorDict operator==(const TensorDict& a, const TensorDict& b) {
    detail::KeyPath path;
    return compared(a, b, false, "TensorDict::operator==", path);
  }
  friend TensorDict operator!=(const TensorDict& a, const TensorDict& b) {
    detail::KeyPath path;
    return compared(a, b, true, "TensorDict::operator!=", path);
  }

  friend std::ostream& operator<<(std::ostream& out, const TensorDict& td);

 private:
  struct PendingWrite {
    AnyTensor target;
    detail::IndexPlan plan;
    AnyTensor value;
  };

  // ---- lookup

  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  static void check_key(const NestedKey& key, const char* fn);
  static NestedKey prefix_of(const NestedKey& key, std::size_t length);
  const Value* lookup(const NestedKey& key) const;
  const Value& lookup_or_throw(const NestedKey& key, const char* fn) const;
  const AnyTensor& tensor_at(const NestedKey& key, const char* fn) const;

  // ---- setting

  /// Checks that `key` can be set and returns the TensorDict whose batch size the value must
  /// start with: the one holding the key's last part, or the deepest existing one on the path
  /// (whose batch size missing intermediate TensorDicts will get).
  const TensorDict& check_set_path(const NestedKey& key, const char* fn) const;
  /// The TensorDict that holds `key`'s last part, creating missing intermediate ones (with
  /// their parent's batch size and names). Call after check_set_path.
  TensorDict& holder_for_set(const NestedKey& key);
  void put(const std::string& key, Value value);
  void set_tensor(const NestedKey& key, AnyTensor value, const char* fn);
  void set_dict(const NestedKey& key, TensorDict value, const char* fn);
  void set_value(const std::string& key, const Value& value, const char* fn);
  void update_at(const TensorDict& other, std::vector<std::string>& prefix);
  void set_locked(bool locked);
  void collect_keys(bool include_nested, bool leaves_only, std::vector<std::string>& prefix,
                    std::vector<NestedKey>& out) const;
  /// Keeps (select) or drops (exclude) the entries whose path is in `paths`; `depth` is the
  /// path position this TensorDict is at.
  TensorDict filtered(const std::vector<const std::vector<std::string>*>& paths, std::size_t depth,
                      bool keep) const;

  // ---- batch size and names helpers

  static void checked_numel(const Shape& shape, const char* fn);
  /// Maps a possibly negative dim into [0, rank), where rank is batch_dims() (+1 for ops that
  /// insert a dim); IndexError naming `fn` otherwise.
  index_t normalize_dim(index_t dim, index_t rank, const char* fn,
                        const char* argument = "dim") const;
  static void check_unique_names(const Names& names, const char* fn);
  static Names checked_names(Names names, index_t batch_dims, const char* fn,
                             bool empty_means_unnamed);
  /// Gives every nested TensorDict this one's names for the shared batch dims.
  void propagate_names(const char* fn);
  Names expand_name_pattern(std::initializer_list<DimName> pattern, const char* fn) const;
  TensorDict renamed(Names names, const char* fn) const;
  void fit_batch_size(std::optional<index_t> cap);
  /// The name of batch dim d, 0 <= d < batch_dims().
  const std::optional<std::string>& name_of(index_t d) const {
    return names_[static_cast<std::size_t>(d)];
  }

  // ---- the per-entry walk behind every shape op and index

  /// batch + the feature dims of an entry of shape `shape` whose first `prefix` dims were the
  /// batch dims being transformed.
  static std::vector<index_t> with_features(const Shape& batch, const Shape& shape, index_t prefix);
  /// A TensorDict holding fn(tensor, path) for every tensor at any depth. `batch` and `names`
  /// are the new top-level batch size and names, `prefix` the number of (top-level) batch dims
  /// fn transforms; every TensorDict gets `batch` plus its own batch dims beyond `prefix`.
  template <class Fn>
  TensorDict applied(Fn& fn, detail::KeyPath& path) const;
  template <class Fn>
  TensorDict map_tensors(const Shape& batch, const Names& names, index_t prefix, Fn& fn,
                         detail::KeyPath& path) const;
  /// As map_tensors for ops with several results: fn returns one tensor per result.
  template <class Fn>
  std::vector<TensorDict> map_tensors_many(const std::vector<Shape>& batches,
                                           const std::vector<Names>& names, index_t prefix, Fn& fn,
                                           detail::KeyPath& path) const;
  static std::vector<AnyTensor> rebind_all(const AnyTensor& t, std::vector<Layout> layouts);
  /// The results of split / chunk: `batch_pieces` are the op applied to the batch layout,
  /// `op(layout)` the same op applied to an entry's layout.
  template <class Op>
  std::vector<TensorDict> pieces(const std::vector<Layout>& batch_pieces, Op&& op) const;
  /// Gathers `positions` along batch dim `d` of every entry (copies).
  TensorDict gathered_along(index_t d, const Tensor<index_t>& positions, const char* fn) const;

  // ---- indexing helpers

  /// The checks of an index expression that the view layer would report under its own name.
  void require_batch_dims(std::initializer_list<TensorIndex> indices, const char* fn) const;
  /// The names of the batch dims after indexing: an integer drops its dim's name, NewAxis adds
  /// an unnamed dim, a single 1-d index tensor or mask keeps its dim's name, other gathered dims
  /// have none.
  Names names_after_index(std::initializer_list<TensorIndex> indices, const detail::IndexPlan& plan,
                          std::size_t rank) const;
  static void check_writable(const Layout& target, const detail::KeyPath& path, const char* fn);
  static void run_writes(std::vector<PendingWrite>& writes, const char* fn);
  /// True when both hold the same keys, nested keys included.
  static bool same_key_set(const TensorDict& a, const TensorDict& b);
  static void check_broadcast(const Shape& value, const Shape& target, const detail::KeyPath& path,
                              const char* fn);
  /// Zero-filled entries shaped like `value`'s: `outer` and `outer_names` (the top-level batch
  /// size and names) replace the first `indexed_dims` dims of each of the value's shapes.
  void preallocate_like(const TensorDict& value, index_t indexed_dims, const Shape& outer,
                        const Names& outer_names);
  void plan_writes(const TensorDict& value, std::initializer_list<TensorIndex> indices,
                   index_t indexable, const char* fn, std::vector<PendingWrite>& writes,
                   detail::KeyPath& path);
  template <class Fn>
  void for_each_leaf(Fn& fn, detail::KeyPath& path) {
    for_each_leaf_of(*this, fn, path);
  }
  template <class Fn>
  void for_each_leaf(Fn& fn, detail::KeyPath& path) const {
    for_each_leaf_of(*this, fn, path);
  }
  /// fn(tensor, path) for every tensor of `self` (TensorDict or const TensorDict), depth first.
  template <class Self, class Fn>
  static void for_each_leaf_of(Self& self, Fn& fn, detail::KeyPath& path) {
    for (auto& [key, value] : self.entries_) {
      path.push(key);
      if (value.is_tensor())
        fn(value.tensor(), path);
      else
        for_each_leaf_of(value.dict(), fn, path);
      path.pop();
    }
  }

  // ---- stack, cat and comparison

  static bool same_except(const Shape& a, const Shape& b, index_t d);
  /// The entry `key` of parts[i], which is usually at the same position as in parts[0].
  static const Value* entry_of(const TensorDict& part, std::size_t position,
                               const std::string& key);
  /// Names shared by all parts: per dim, the name any part gives it (names must not conflict).
  static Names unified_names(const std::vector<const TensorDict*>& parts, const char* fn,
                             const detail::KeyPath& path);
  static void check_same_keys(const std::vector<const TensorDict*>& parts, const char* fn,
                              const detail::KeyPath& path);
  /// stack (`stacking`) or cat of `parts` along batch dim `d`.
  static TensorDict joined(const std::vector<const TensorDict*>& parts, index_t d, bool stacking,
                           const char* fn, detail::KeyPath& path);
  static TensorDict compared(const TensorDict& a, const TensorDict& b, bool negate, const char* fn,
                             detail::KeyPath& path);

  std::vector<Item> entries_;
  Shape batch_size_;
  Names names_;
  bool locked_ = false;
};

/// Element-wise comparison of two TensorDicts (same as a == b): reduce it with all() or any().
TBATCH_INLINE TensorDict all_equal(const TensorDict& a, const TensorDict& b);

#if TBATCH_DEFINITIONS

TBATCH_INLINE TensorDict::Value::Value(TensorDict dict)
    : value_(std::in_place_index<1>, std::move(dict)) {}

namespace detail {
TBATCH_INLINE DictBox::DictBox(TensorDict dict)
    : dict_(std::make_unique<TensorDict>(std::move(dict))) {}
TBATCH_INLINE DictBox::DictBox(const DictBox& other)
    : dict_(std::make_unique<TensorDict>(*other.dict_)) {}
TBATCH_INLINE DictBox::DictBox(DictBox&& other) noexcept = default;
TBATCH_INLINE DictBox& DictBox::operator=(const DictBox& other) {
  if (this != &other) dict_ = std::make_unique<TensorDict>(*other.dict_);
  return *this;
}
TBATCH_INLINE DictBox& DictBox::operator=(DictBox&& other) noexcept = default;
TBATCH_INLINE DictBox::~DictBox() = default;
}  // namespace detail

TBATCH_INLINE bool detail::starts_with(const Shape& shape, const Shape& prefix) {
  return shape.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), shape.begin());
}

TBATCH_INLINE TensorDict all_equal(const TensorDict& a, const TensorDict& b) {
  return a == b;
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
