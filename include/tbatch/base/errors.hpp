#pragma once
// The tbatch exception hierarchy and the one way its messages are built and thrown.

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <type_traits>

#include "tbatch/base/config.hpp"

#if TBATCH_DEFINITIONS
#include <charconv>
#include <cstdio>
#endif

namespace tbatch {

/// Base of every exception tbatch throws for bad input.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// A shape, rank or size does not fit what the function needs.
class ShapeError : public Error {
 public:
  using Error::Error;
};
/// An index or dim is outside its valid range.
class IndexError : public Error {
 public:
  using Error::Error;
};
/// An argument has a value the function does not accept (mode, step, pad ...).
class ValueError : public Error {
 public:
  using Error::Error;
};
/// An element type does not match what was expected.
class TypeError : public Error {
 public:
  using Error::Error;
};
/// A key is missing from (or already present in) a TensorDict.
class KeyError : public Error {
 public:
  using Error::Error;
};
/// A file cannot be opened, read, written or renamed (the message names the path and the
/// operating system's cause).
class FileError : public Error {
 public:
  using Error::Error;
};
/// A file's contents are not what the format requires (truncated, bad header, inconsistent
/// offsets ...).
class FormatError : public Error {
 public:
  using Error::Error;
};

namespace detail {

enum class ErrorKind { error, shape, index, value, type, key, file, format };

template <class E>
inline constexpr ErrorKind error_kind_of = [] {
  if constexpr (std::is_same_v<E, Error>)
    return ErrorKind::error;
  else if constexpr (std::is_same_v<E, ShapeError>)
    return ErrorKind::shape;
  else if constexpr (std::is_same_v<E, IndexError>)
    return ErrorKind::index;
  else if constexpr (std::is_same_v<E, ValueError>)
    return ErrorKind::value;
  else if constexpr (std::is_same_v<E, TypeError>)
    return ErrorKind::type;
  else if constexpr (std::is_same_v<E, KeyError>)
    return ErrorKind::key;
  else if constexpr (std::is_same_v<E, FileError>)
    return ErrorKind::file;
  else {
    static_assert(std::is_same_v<E, FormatError>, "fail<E>: E must be a tbatch error kind");
    return ErrorKind::format;
  }
}();

/// A std::streambuf that appends to a string: how a part with only an operator<< is printed.
class StringAppender : public std::streambuf {
 public:
  explicit StringAppender(std::string& out) : out_(out) {}

 protected:
  TBATCH_INLINE int_type overflow(int_type c) override;
  TBATCH_INLINE std::streamsize xsputn(const char* s, std::streamsize n) override;

 private:
  std::string& out_;
};

template <class T>
void append_streamed(std::string& out, const void* value) {
  StringAppender appender(out);
  std::ostream stream(&appender);
  stream << *static_cast<const T*>(value);
}

/// One piece of a message, erased to a few kinds so that a call site that builds a message
/// instantiates nothing but these constructors. Text, numbers and characters print as an
/// std::ostream with default flags prints them; other types through their operator<<.
class MessagePart {
 public:
  MessagePart(const char* text) : kind_(Kind::text), text_(text) {}
  MessagePart(std::string_view text) : kind_(Kind::text), text_(text) {}
  MessagePart(const std::string& text) : kind_(Kind::text), text_(text) {}
  MessagePart(char c) : kind_(Kind::character), signed_(c) {}
  MessagePart(signed char c) : kind_(Kind::character), signed_(c) {}
  MessagePart(unsigned char c) : kind_(Kind::character), signed_(static_cast<char>(c)) {}
  MessagePart(bool b) : kind_(Kind::signed_integer), signed_(b ? 1 : 0) {}
  template <class I>
  requires(std::is_integral_v<I>&& std::is_signed_v<I>) MessagePart(I value)
      : kind_(Kind::signed_integer), signed_(static_cast<std::int64_t>(value)) {}
  template <class I>
  requires(std::is_integral_v<I>&& std::is_unsigned_v<I>) MessagePart(I value)
      : kind_(Kind::unsigned_integer), unsigned_(static_cast<std::uint64_t>(value)) {}
  MessagePart(double value) : kind_(Kind::floating), floating_(value) {}
  MessagePart(float value) : kind_(Kind::floating), floating_(value) {}
  template <class T>
  requires(!std::is_arithmetic_v<T> && !std::is_convertible_v<const T&, std::string_view>)
      MessagePart(const T& value)
      : kind_(Kind::streamed), object_(&value), append_(&append_streamed<T>) {}

  TBATCH_INLINE void append_to(std::string& out) const;

 private:
  enum class Kind { text, character, signed_integer, unsigned_integer, floating, streamed };
  Kind kind_;
  std::string_view text_;
  union {
    std::int64_t signed_ = 0;
    std::uint64_t unsigned_;
    double floating_;
    const void* object_;
  };
  void (*append_)(std::string&, const void*) = nullptr;
};

/// The parts joined into one string.
TBATCH_INLINE std::string join_parts(std::initializer_list<MessagePart> parts);

/// Throws the error of `kind` whose message is "<function>: <parts...>".
[[noreturn]] TBATCH_INLINE void raise_error(ErrorKind kind, const char* function,
                                            std::initializer_list<MessagePart> parts);

/// Every argument printed into one string: the building block of composed messages.
template <class... Parts>
std::string concat(const Parts&... parts) {
  return join_parts({MessagePart(parts)...});
}

/// Prints a list of values as "[a, b, c]" inside error messages.
template <class Range>
struct Listed {
  const Range& values;
  friend std::ostream& operator<<(std::ostream& out, const Listed& l) {
    out << '[';
    bool first = true;
    for (const auto& v : l.values) {
      out << (first ? "" : ", ") << v;
      first = false;
    }
    return out << ']';
  }
};
template <class Range>
Listed<Range> listed(const Range& values) {
  return Listed<Range>{values};
}

/// Throws `E` whose message is "<function>: <parts...>", as in
/// `fail<ValueError>("pad", {"dim ", dim, " is out of range"})`. One function per error kind,
/// not one per call site's argument types; cold, so the parts are built on the path that throws.
template <class E>
[[noreturn, gnu::cold]] inline void fail(const char* function,
                                         std::initializer_list<MessagePart> parts) {
  raise_error(error_kind_of<E>, function, parts);
}

#if TBATCH_DEFINITIONS

TBATCH_INLINE StringAppender::int_type StringAppender::overflow(int_type c) {
  if (!traits_type::eq_int_type(c, traits_type::eof()))
    out_.push_back(traits_type::to_char_type(c));
  return traits_type::not_eof(c);
}

TBATCH_INLINE std::streamsize StringAppender::xsputn(const char* s, std::streamsize n) {
  out_.append(s, static_cast<std::size_t>(n));
  return n;
}

TBATCH_INLINE void MessagePart::append_to(std::string& out) const {
  char buffer[32];
  switch (kind_) {
    case Kind::text:
      out.append(text_);
      return;
    case Kind::character:
      out.push_back(static_cast<char>(signed_));
      return;
    case Kind::signed_integer:
      out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, signed_).ptr);
      return;
    case Kind::unsigned_integer:
      out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, unsigned_).ptr);
      return;
    case Kind::floating: {
      // std::ostream's default: %g with precision 6.
      const int n = std::snprintf(buffer, sizeof buffer, "%g", floating_);
      out.append(buffer, static_cast<std::size_t>(n));
      return;
    }
    case Kind::streamed:
      append_(out, object_);
      return;
  }
}

TBATCH_INLINE std::string join_parts(std::initializer_list<MessagePart> parts) {
  std::string out;
  for (const MessagePart& part : parts)
    part.append_to(out);
  return out;
}

[[noreturn]] TBATCH_INLINE void raise_error(ErrorKind kind, const char* function,
                                            std::initializer_list<MessagePart> parts) {
  std::string message = function;
  message += ": ";
  for (const MessagePart& part : parts)
    part.append_to(message);
  switch (kind) {
    case ErrorKind::shape:
      throw ShapeError(message);
    case ErrorKind::index:
      throw IndexError(message);
    case ErrorKind::value:
      throw ValueError(message);
    case ErrorKind::type:
      throw TypeError(message);
    case ErrorKind::key:
      throw KeyError(message);
    case ErrorKind::file:
      throw FileError(message);
    case ErrorKind::format:
      throw FormatError(message);
    case ErrorKind::error:
      break;
  }
  throw Error(message);
}

#endif  // TBATCH_DEFINITIONS

}  // namespace detail
}  // namespace tbatch
