#pragma once
// Reading a safetensors header (docs/io.md): the 8-byte length, then the JSON object read as a
// stream of events, never as a JSON tree, so a hostile header can neither nest its way into a
// stack overflow nor make the reader allocate much more than the header's own size.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/io/config.hpp"

#if TBATCH_IO_DEFINITIONS
#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "tbatch/base/checked_math.hpp"
#endif

namespace tbatch::io::detail {

using tbatch::detail::fail;

/// The safetensors name of a dtype (F32, BF16, I64, BOOL, ...).
TBATCH_INLINE const char* safetensors_dtype(DType dtype);

/// The dtype of a safetensors name, or nothing for a name tbatch does not hold.
TBATCH_INLINE std::optional<DType> dtype_of_safetensors(const std::string& name);

/// Little-endian u64 at `p`.
TBATCH_INLINE std::uint64_t read_u64(const unsigned char* p);

/// One tensor's entry in a parsed header.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin, end;  // in the data section
};

/// A validated header: entries sorted by their data offset, metadata and where data starts.
struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;
};

/// The most header bytes accepted (as the reference implementation): a bad length cannot make
/// the loader allocate much.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;
/// The most dims of a tensor in a file: a shape costs memory per dim, so without a cap a
/// header of zeros would cost many times its size.
inline constexpr std::size_t max_file_rank = 64;
/// The deepest nesting of JSON read from a file (a header, or a structure in its metadata).
inline constexpr int max_json_depth = 256;

/// The header length stored in the first 8 bytes of a file of `size` bytes, checked against it.
TBATCH_INLINE std::uint64_t header_length(const unsigned char* first8, std::uint64_t size,
                                          const std::string& what, const char* fn);

/// True when the JSON `text` nests arrays and objects deeper than `limit` (strings skipped):
/// checked before a JSON tree is built, since copying or printing one recurses per level.
TBATCH_INLINE bool nests_deeper(const char* text, std::size_t length, int limit);

/// Parses and checks the JSON header `text` (`length` bytes) of a file of `size` bytes; `what`
/// names the file in messages. The header is one JSON object with only JSON whitespace around
/// it, as the reference reader accepts (no byte-order mark, no NUL padding).
TBATCH_INLINE Header parse_header(const char* text, std::uint64_t length, std::uint64_t size,
                                  const std::string& what, const char* fn);

#if TBATCH_IO_DEFINITIONS

TBATCH_INLINE const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
#define TBATCH_SAFETENSORS_NAME(type, tag, name, code, bits, safetensors, ...) \
  case DType::tag:                                                             \
    return safetensors;
    TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_SAFETENSORS_NAME)
#undef TBATCH_SAFETENSORS_NAME
  }
  fail<ValueError>("io::save", {"dtype ", static_cast<int>(dtype), " is not a DType"});
}

TBATCH_INLINE std::optional<DType> dtype_of_safetensors(const std::string& name) {
#define TBATCH_SAFETENSORS_MATCH(type, tag, text, code, bits, safetensors, ...) \
  if (name == safetensors) return DType::tag;
  TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_SAFETENSORS_MATCH)
#undef TBATCH_SAFETENSORS_MATCH
  return std::nullopt;
}

TBATCH_INLINE std::uint64_t read_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

TBATCH_INLINE std::uint64_t header_length(const unsigned char* first8, std::uint64_t size,
                                          const std::string& what, const char* fn) {
  if (size < 8)
    fail<FormatError>(fn, {what, " has ", size,
                           " bytes; a safetensors file starts with an 8-byte header length"});
  const std::uint64_t length = read_u64(first8);
  if (length > max_header_bytes || length > size - 8)
    fail<FormatError>(fn,
                      {what, " declares a header of ", length, " bytes but has ", size - 8,
                       " bytes after the length (at most ", max_header_bytes, " are accepted)"});
  return length;
}

TBATCH_INLINE bool nests_deeper(const char* text, std::size_t length, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < length; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

/// The events of nlohmann's streaming parser for a header, each checked as it comes.
class HeaderReader {
 public:
  using json = nlohmann::json;

  HeaderReader(Header& header, std::uint64_t data_bytes, const std::string& what, const char* fn)
      : header_(header), data_bytes_(data_bytes), what_(what), fn_(fn) {}

  bool start_object(std::size_t) { return open(false); }
  bool start_array(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& key) {
    if (in_ == In::top) {
      name_ = key;
    } else if (in_ == In::metadata) {
      field_ = key;
    } else if (in_ == In::tensor) {
      field_ = key;
      for (const auto& [known, seen] :
           {std::pair{"dtype", &seen_dtype_}, std::pair{"shape", &seen_shape_},
            std::pair{"data_offsets", &seen_offsets_}})
        if (key == known) {
          if (*seen) bad("has two '", known, "' fields");
          *seen = true;
        }
    }
    return true;
  }
  bool null() { return scalar("null"); }
  bool boolean(bool value) { return scalar(value ? "true" : "false"); }
  bool number_integer(json::number_integer_t value) {
    if (in_ == In::shape && value >= 0) return size(std::uint64_t(value));
    return scalar(std::to_string(value));
  }
  bool number_unsigned(json::number_unsigned_t value) {
    if (in_ == In::shape || in_ == In::offsets) return size(value);
    return scalar(std::to_string(value));
  }
  bool number_float(json::number_float_t, const std::string& text) { return scalar(shown(text)); }
  bool string(std::string& value) {
    if (in_ == In::metadata) {
      if (!header_.metadata.emplace(field_, std::move(value)).second)
        fail<FormatError>(fn_, {what_, ": __metadata__ has the key '", shown(field_), "' twice"});
      return true;
    }
    if (in_ == In::tensor && field_ == "dtype") {
      dtype_ = dtype_of_safetensors(value);
      if (!dtype_)
        bad("has dtype ", shown(value),
            ", which tbatch does not hold (expected F16, BF16, F32, F64, I8, I16, I32, I64, U8, "
            "U16, U32 or BOOL)");
      return true;
    }
    return scalar("a string");
  }
  bool binary(json::binary_t&) { return scalar("binary data"); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) {
    fail<FormatError>(fn_, {what_, " has a header that is not a JSON object (invalid JSON at byte ",
                            position, " of the header)"});
  }

 private:
  // Where the parser is: which container the next value belongs to.
  enum class In { start, top, metadata, tensor, shape, offsets, skipped };

  template <class... Why>
  [[noreturn]] void bad(const Why&... why) const {
    fail<FormatError>(fn_, {what_, ": tensor '", shown(name_), "' ", why...});
  }
  /// Text from the file for a message, shortened: a message stays small whatever the file.
  static std::string shown(const std::string& text) {
    return text.size() <= 200 ? text : text.substr(0, 200) + "...";
  }

  bool open(bool array) {
    if (++depth_ > max_json_depth)
      fail<FormatError>(fn_,
                        {what_, ": the header nests JSON deeper than ", max_json_depth, " levels"});
    const char* kind = array ? "an array" : "an object";
    switch (in_) {
      case In::start:
        if (array) fail<FormatError>(fn_, {what_, " has a header that is not a JSON object"});
        in_ = In::top;
        break;
      case In::top:
        if (name_ == "__metadata__") {
          if (array || seen_metadata_)
            fail<FormatError>(fn_, {what_, ": __metadata__ is not one JSON object of strings"});
          seen_metadata_ = true;
          in_ = In::metadata;
        } else {
          if (array) bad("is not a JSON object");
          if (name_.empty()) bad("has an empty name, which no tensor may have");
          begin_tensor();
        }
        break;
      case In::metadata:
        fail<FormatError>(fn_,
                          {what_, ": __metadata__ entry '", shown(field_), "' is not a string"});
      case In::tensor:
        if (field_ == "shape" && array) {
          in_ = In::shape;
        } else if (field_ == "data_offsets" && array) {
          in_ = In::offsets;
        } else if (field_ == "dtype" || field_ == "shape" || field_ == "data_offsets") {
          scalar(kind);
        } else {
          in_ = In::skipped;  // a field the format does not define, ignored as the reference does
          skipped_from_ = depth_;
        }
        break;
      case In::shape:
      case In::offsets:
        scalar(kind);
        break;
      case In::skipped:
        break;
    }
    return true;
  }
  bool close() {
    switch (in_) {
      case In::skipped:
        if (depth_ == skipped_from_) in_ = In::tensor;
        break;
      case In::shape:
      case In::offsets:
        in_ = In::tensor;
        break;
      case In::tensor:
        end_tensor();
        in_ = In::top;
        break;
      case In::metadata:
        in_ = In::top;
        break;
      case In::top:
      case In::start:
        in_ = In::start;
        break;
    }
    --depth_;
    return true;
  }
  /// A value that is not where the format wants it (`text` says what it is).
  bool scalar(const std::string& text) {
    switch (in_) {
      case In::start:
        fail<FormatError>(fn_, {what_, " has a header that is not a JSON object"});
      case In::top:
        if (name_ == "__metadata__") {
          if (text == "null" && !seen_metadata_) {  // the reference reads null as no metadata
            seen_metadata_ = true;
            return true;
          }
          fail<FormatError>(fn_, {what_, ": __metadata__ is not one JSON object of strings"});
        }
        bad("is not a JSON object");
      case In::metadata:
        fail<FormatError>(fn_,
                          {what_, ": __metadata__ entry '", shown(field_), "' is not a string"});
      case In::tensor:
        if (field_ == "dtype") bad("has no dtype string");
        if (field_ == "shape") bad("has no shape array");
        if (field_ == "data_offsets") bad("has no data_offsets pair of sizes");
        return true;
      case In::shape:
        bad("has a shape entry that is not a size: ", text);
      case In::offsets:
        bad("has no data_offsets pair of sizes");
      case In::skipped:
        return true;
    }
    return true;
  }
  bool size(std::uint64_t value) {
    if (in_ == In::offsets) {
      if (offsets_ == 2) bad("has no data_offsets pair of sizes");
      offset_[offsets_++] = value;
      return true;
    }
    if (value > std::uint64_t(std::numeric_limits<index_t>::max()))
      bad("has a shape entry that is not a size: ", value);
    if (shape_.size() == max_file_rank)
      bad("has a shape of more than ", max_file_rank, " dims (tbatch reads files of at most ",
          max_file_rank, ")");
    shape_.push_back(index_t(value));
    return true;
  }
  void begin_tensor() {
    in_ = In::tensor;
    dtype_.reset();
    shape_ = Shape();
    offsets_ = 0;
    seen_dtype_ = seen_shape_ = seen_offsets_ = false;
    field_.clear();
  }
  void end_tensor() {
    if (!dtype_) bad("has no dtype string");
    if (!seen_shape_) bad("has no shape array");
    if (offsets_ != 2) bad("has no data_offsets pair of sizes");
    // The sizes of a tensor of this shape and its row-major strides must fit in an index, as
    // tbatch::Tensor requires; a dim of size 0 does not exempt the strides.
    index_t numel = 1, strides = 1, bytes = 0;
    for (const index_t dim : shape_)
      if (tbatch::detail::multiply_overflows(strides, std::max<index_t>(dim, 1), strides) ||
          tbatch::detail::multiply_overflows(numel, dim, numel))
        bad("has a shape whose size overflows: ", shape_);
    const std::uint64_t begin = offset_[0], end = offset_[1];
    if (begin > end || end > data_bytes_)
      bad("has data_offsets [", begin, ", ", end, "] outside the ", data_bytes_,
          " data bytes (or reversed)");
    if (tbatch::detail::multiply_overflows(numel, dtype_size(*dtype_), bytes) ||
        std::uint64_t(bytes) != end - begin)
      bad("has shape ", shape_, " of dtype ", *dtype_, " but ", end - begin, " bytes of data");
    header_.entries.push_back(Entry{name_, *dtype_, std::move(shape_), begin, end});
  }

  Header& header_;
  std::uint64_t data_bytes_;
  const std::string& what_;
  const char* fn_;
  In in_ = In::start;
  int depth_ = 0, skipped_from_ = 0;
  std::string name_, field_;  // the tensor (or __metadata__) and its field being read
  bool seen_metadata_ = false;
  std::optional<DType> dtype_;
  Shape shape_;
  std::uint64_t offset_[2] = {0, 0};
  int offsets_ = 0;
  bool seen_dtype_ = false, seen_shape_ = false, seen_offsets_ = false;
};

TBATCH_INLINE Header parse_header(const char* text, std::uint64_t length, std::uint64_t size,
                                  const std::string& what, const char* fn) {
  // nlohmann's parser takes a NUL byte for the end of its input: a NUL (never valid in JSON)
  // must not hide what follows it.
  if (const void* nul = std::memchr(text, 0, std::size_t(length)))
    fail<FormatError>(
        fn, {what, " has a NUL byte in its header (at byte ", static_cast<const char*>(nul) - text,
             "); a header is JSON, padded with spaces"});
  std::size_t first = 0;
  while (first < length && std::strchr(" \t\n\r", text[first]) != nullptr)
    ++first;
  if (first == length || text[first] != '{')
    fail<FormatError>(fn, {what, " has a header that is not a JSON object"});
  Header header;
  header.data_start = 8 + length;
  const std::uint64_t data_bytes = size - header.data_start;
  HeaderReader reader(header, data_bytes, what, fn);
  if (!nlohmann::json::sax_parse(text, text + length, &reader))
    fail<FormatError>(fn, {what, " has a header that is not a JSON object"});
  // Each name once: JSON readers disagree on which of two values they keep.
  std::vector<const Entry*> by_name;
  for (const Entry& e : header.entries)
    by_name.push_back(&e);
  std::sort(by_name.begin(), by_name.end(),
            [](const Entry* a, const Entry* b) { return a->name < b->name; });
  for (std::size_t i = 1; i < by_name.size(); ++i)
    if (by_name[i]->name == by_name[i - 1]->name)
      fail<FormatError>(fn,
                        {what, ": tensor '", by_name[i]->name, "' appears twice in the header"});
  std::sort(header.entries.begin(), header.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The tensors tile the data section exactly: no overlap, no gap, nothing after them.
  std::uint64_t reached = 0;
  for (const Entry& e : header.entries) {
    if (e.begin != reached)
      fail<FormatError>(fn, {what, ": tensor '", e.name, "' starts at data byte ", e.begin,
                             " but the tensors before it end at ", reached,
                             " (offsets must tile the data without overlap or gap)"});
    reached = e.end;
  }
  if (reached != data_bytes)
    fail<FormatError>(
        fn, {what, ": the tensors cover ", reached, " data bytes but the file has ", data_bytes});
  return header;
}

#endif  // TBATCH_IO_DEFINITIONS

}  // namespace tbatch::io::detail
