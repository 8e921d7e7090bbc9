#pragma once
// The tbatch exception hierarchy and the helper that builds its messages.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"

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

/// Streams every argument into one string: the building block of every error message.
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
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

/// Throws `E` whose message is "<function>: <parts...>".
template <class E, class... Parts>
[[noreturn]] void fail(const char* function, const Parts&... parts) {
  throw E(concat(function, ": ", parts...));
}

}  // namespace detail
}  // namespace tbatch
