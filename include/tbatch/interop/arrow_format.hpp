#pragma once
// Arrow's names for what tbatch holds: the format strings of the element types, the binary
// key/value encoding of schema metadata, and a reader for the JSON parameters of the tensor
// extension types (arrays of integers; everything else in the object is skipped).

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"

namespace tbatch {
namespace detail::arrowc {

inline constexpr std::string_view extension_name_key = "ARROW:extension:name";
inline constexpr std::string_view extension_metadata_key = "ARROW:extension:metadata";
inline constexpr std::string_view fixed_shape_tensor_name = "arrow.fixed_shape_tensor";
inline constexpr std::string_view variable_shape_tensor_name = "arrow.variable_shape_tensor";

/// The Arrow format string of `dtype`; TypeError naming `function` for bfloat16, which Arrow
/// has no type for.
inline const char* format_of(DType dtype, const char* function) {
  switch (dtype) {
    case DType::float32:
      return "f";
    case DType::float64:
      return "g";
    case DType::float16:
      return "e";
    case DType::int8:
      return "c";
    case DType::int16:
      return "s";
    case DType::int32:
      return "i";
    case DType::int64:
      return "l";
    case DType::uint8:
      return "C";
    case DType::uint16:
      return "S";
    case DType::uint32:
      return "I";
    case DType::boolean:
      return "b";
    case DType::bfloat16:
      break;
  }
  fail<TypeError>(function,
                  {"dtype ", dtype,
                   " has no Arrow type (Arrow's floats are float16, float32 and float64); "
                   "cast<float>() first"});
}

/// The dtype of a primitive Arrow format string; nullopt for any other format.
inline std::optional<DType> dtype_of_format(std::string_view format) {
  static constexpr std::pair<std::string_view, DType> table[] = {
      {"f", DType::float32}, {"g", DType::float64}, {"e", DType::float16}, {"c", DType::int8},
      {"s", DType::int16},   {"i", DType::int32},   {"l", DType::int64},   {"C", DType::uint8},
      {"S", DType::uint16},  {"I", DType::uint32},  {"b", DType::boolean}};
  for (const auto& [name, dtype] : table)
    if (name == format) return dtype;
  return std::nullopt;
}

using MetadataEntries = std::vector<std::pair<std::string, std::string>>;

/// Schema metadata in the specification's encoding: an int32 count, then per entry the int32
/// byte length and bytes of the key and of the value (native byte order).
inline std::string encode_metadata(const MetadataEntries& entries) {
  std::string out;
  const auto put = [&out](std::size_t n) {
    const auto value = static_cast<std::int32_t>(n);
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
  };
  put(entries.size());
  for (const auto& [key, value] : entries) {
    put(key.size());
    out += key;
    put(value.size());
    out += value;
  }
  return out;
}

/// The entries of encoded metadata (none when `metadata` is null). ValueError naming
/// `function` for a negative count or length. The encoding has no total length: the producer
/// vouches for the bytes its lengths describe.
inline MetadataEntries decode_metadata(const char* metadata, const char* function) {
  MetadataEntries entries;
  if (metadata == nullptr) return entries;
  const auto get = [&](const char* what) {
    std::int32_t value;
    std::memcpy(&value, metadata, sizeof value);
    metadata += sizeof value;
    if (value < 0) fail<ValueError>(function, {"the schema metadata has ", what, " ", value});
    return value;
  };
  const std::int32_t count = get("entry count");
  for (std::int32_t i = 0; i < count; ++i) {
    const std::int32_t key_length = get("a key length");
    std::string key(metadata, static_cast<std::size_t>(key_length));
    metadata += key_length;
    const std::int32_t value_length = get("a value length");
    entries.emplace_back(std::move(key), std::string(metadata, std::size_t(value_length)));
    metadata += value_length;
  }
  return entries;
}

/// The value of `key` among `entries`, if present.
inline const std::string* find_metadata(const MetadataEntries& entries, std::string_view key) {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

/// One member of a JSON object read as an array of integers; a JSON null entry is nullopt.
using JsonIntegers = std::vector<std::optional<index_t>>;

/// Reads the members of a JSON object that are arrays of integers (and nulls), as the tensor
/// extensions' "shape", "permutation" and "uniform_shape" are; other members are checked for
/// well-formedness and skipped. ValueError naming `function` for malformed JSON, a duplicate
/// member, or a wanted member that is not an array of integers.
class JsonIntegerArrays {
 public:
  JsonIntegerArrays(std::string_view text, std::vector<std::string_view> wanted,
                    const char* function)
      : text_(text), function_(function), wanted_(std::move(wanted)), found_(wanted_.size()) {
    if (text_.find_first_not_of(" \t\r\n") == std::string_view::npos) return;  // empty: {}
    expect('{');
    if (!take('}')) {
      do {
        const std::string key = read_string();
        expect(':');
        read_member(key);
      } while (take(','));
      expect('}');
    }
    skip_space();
    if (at_ < text_.size()) error("text after the object");
  }

  /// The array of member `name` (one of `wanted`), if the object has it.
  const std::optional<JsonIntegers>& operator[](std::string_view name) const {
    for (std::size_t i = 0; i < wanted_.size(); ++i)
      if (wanted_[i] == name) return found_[i];
    fail<ValueError>(function_, {"JSON member \"", name, "\" was not asked for"});
  }

 private:
  static constexpr int max_depth = 64;

  [[noreturn]] void error(const char* what) const {
    fail<ValueError>(function_, {"the extension metadata is not the JSON expected: ", what,
                                 " at byte ", at_, " of ", text_.size()});
  }
  void skip_space() {
    while (at_ < text_.size() && std::strchr(" \t\r\n", text_[at_]) != nullptr && text_[at_] != 0)
      ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) return ++at_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) error(c == '{' ? "no object" : "a missing delimiter");
  }
  std::string read_string() {
    if (!take('"')) error("no string");
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      if (text_[at_] == '\\' && ++at_ >= text_.size()) break;
      out += text_[at_++];
    }
    if (at_ >= text_.size()) error("an unterminated string");
    ++at_;
    return out;
  }
  std::optional<index_t> read_integer() {
    skip_space();
    if (text_.substr(at_, 4) == "null") return at_ += 4, std::nullopt;
    const bool negative = at_ < text_.size() && text_[at_] == '-';
    at_ += negative ? 1 : 0;
    const std::size_t first = at_;
    index_t value = 0;
    for (; at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9'; ++at_) {
      if (value > (std::numeric_limits<index_t>::max() - 9) / 10) error("an integer overflow");
      value = value * 10 + (text_[at_] - '0');
    }
    if (at_ == first) error("an entry that is not an integer or null");
    return negative ? -value : value;
  }
  void read_member(const std::string& key) {
    for (std::size_t i = 0; i < wanted_.size(); ++i) {
      if (wanted_[i] != key) continue;
      if (found_[i]) error("a duplicate member");
      found_[i].emplace();
      expect('[');
      if (!take(']')) {
        do
          found_[i]->push_back(read_integer());
        while (take(','));
        expect(']');
      }
      return;
    }
    skip_value(0);
  }
  void skip_value(int depth) {
    if (depth > max_depth) error("nesting deeper than 64");
    skip_space();
    if (at_ >= text_.size()) error("a missing value");
    const char c = text_[at_];
    if (c == '"') {
      read_string();
    } else if (c == '[' || c == '{') {
      ++at_;
      const char close = c == '[' ? ']' : '}';
      if (take(close)) return;
      do {
        if (c == '{') {
          read_string();
          expect(':');
        }
        skip_value(depth + 1);
      } while (take(','));
      expect(close);
    } else {
      const std::size_t first = at_;
      while (at_ < text_.size() && std::strchr("+-.0123456789eEtrufalsn", text_[at_]) != nullptr &&
             text_[at_] != 0)
        ++at_;
      if (at_ == first) error("an unexpected character");
    }
  }

  std::string_view text_;
  const char* function_;
  std::vector<std::string_view> wanted_;
  std::vector<std::optional<JsonIntegers>> found_;
  std::size_t at_ = 0;
};

}  // namespace detail::arrowc
}  // namespace tbatch
