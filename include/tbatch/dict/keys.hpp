#pragma once
// The keys and dim names of a TensorDict: NestedKey (a key, or a path into nested TensorDicts)
// and DimName (one entry of refine_names / rename); and, in detail, the key paths and printers
// of keys and names that error messages use.

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/small_vector.hpp"
#include "tbatch/view/index_types.hpp"

namespace tbatch {

/// A key of a TensorDict: one string, or a path of strings into nested TensorDicts
/// (Python's tuple keys). Converts from "a", std::string, {"a", "b"} and a vector of strings.
class NestedKey {
 public:
  TBATCH_INLINE NestedKey(const char* key);
  NestedKey(std::string key) { parts_.push_back(std::move(key)); }
  NestedKey(std::vector<std::string> path) : parts_(std::move(path)) {}
  NestedKey(std::initializer_list<std::string> path) : parts_(path) {}

  const std::vector<std::string>& parts() const { return parts_; }
  std::size_t size() const { return parts_.size(); }
  bool empty() const { return parts_.empty(); }
  bool is_nested() const { return parts_.size() > 1; }
  const std::string& operator[](std::size_t i) const { return parts_[i]; }
  const std::string& back() const { return parts_.back(); }

  friend bool operator==(const NestedKey& a, const NestedKey& b) { return a.parts_ == b.parts_; }
  /// 'a' for one part, ('a', 'b') for a path, as Python prints them.
  friend TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const NestedKey& key);

 private:
  std::vector<std::string> parts_;
};

/// One entry of TensorDict::refine_names / rename: a name, no name (std::nullopt) or Ellipsis
/// (the existing names of the dims it stands for).
class DimName {
 public:
  DimName(const char* name) {
    if (name != nullptr) name_ = std::string(name);
  }
  DimName(std::string name) : name_(std::move(name)) {}
  DimName(std::optional<std::string> name) : name_(std::move(name)) {}
  DimName(std::nullopt_t) {}
  DimName(EllipsisT) : ellipsis_(true) {}

  bool is_ellipsis() const { return ellipsis_; }
  const std::optional<std::string>& name() const { return name_; }

 private:
  std::optional<std::string> name_;
  bool ellipsis_ = false;
};

namespace detail {

using DimNames = std::vector<std::optional<std::string>>;

/// Prints dim names as Python does: ['robot', None].
struct NamesText {
  const DimNames& names;
  friend TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const NamesText& t);
};

/// Prints keys as Python does: ['a', 'b'].
struct KeysText {
  std::vector<std::string> keys;
  friend TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const KeysText& t);
};

/// The keys leading to the entry a recursive walk is at, printed like a NestedKey.
class KeyPath {
 public:
  void push(const std::string& key) { parts_.push_back(&key); }
  void pop() { parts_.pop_back(); }
  bool empty() const { return parts_.empty(); }
  TBATCH_INLINE NestedKey key() const;
  friend TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const KeyPath& path);

 private:
  // Inline up to depth 8: every walk over the entries keeps one, for its error messages only.
  detail::SmallVector<const std::string*, 8> parts_;
};

/// Prints " <word> <key>" when the walk is inside a nested TensorDict, nothing at the top.
struct Where {
  const KeyPath& path;
  const char* word;
  friend TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const Where& w);
};

}  // namespace detail

#if TBATCH_DEFINITIONS

TBATCH_INLINE NestedKey::NestedKey(const char* key) {
  if (key == nullptr)
    detail::fail<KeyError>("NestedKey", {"the key is a null pointer; expected a string"});
  parts_.emplace_back(key);
}

TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const NestedKey& key) {
  if (key.size() == 1) return out << '\'' << key.parts_[0] << '\'';
  out << '(';
  for (std::size_t i = 0; i < key.size(); ++i)
    out << (i ? ", " : "") << '\'' << key.parts_[i] << '\'';
  return out << ')';
}

namespace detail {

TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const NamesText& t) {
  out << '[';
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    out << (i ? ", " : "");
    if (t.names[i])
      out << '\'' << *t.names[i] << '\'';
    else
      out << "None";
  }
  return out << ']';
}

TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const KeysText& t) {
  out << '[';
  for (std::size_t i = 0; i < t.keys.size(); ++i)
    out << (i ? ", " : "") << '\'' << t.keys[i] << '\'';
  return out << ']';
}

TBATCH_INLINE NestedKey KeyPath::key() const {
  std::vector<std::string> parts;
  for (const std::string* p : parts_)
    parts.push_back(*p);
  return NestedKey(std::move(parts));
}

TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const KeyPath& path) {
  return out << path.key();
}

TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const Where& w) {
  if (!w.path.empty()) out << ' ' << w.word << ' ' << w.path;
  return out;
}

}  // namespace detail

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
