// Fuzz target: the Arrow C Data Interface import (arrow::import_batch, import_tensor,
// import_any_tensor, value_dtype) on schema and array trees built from the input. The trees
// keep the one promise the specification leaves to the producer, that each buffer holds its
// array's offset + length entries; everything else is arbitrary: formats, buffer and child
// counts, lengths and offsets (some negative or overflowing), list offsets and sizes, validity
// bitmaps and null counts, extension metadata and its JSON. An import must return or throw a
// tbatch::Error, release the array exactly once (never when it was already released), and give
// tensors whose every value can be read.

#include <deque>
#include <string>
#include <tbatch/interop/arrow.hpp>

#include "fuzz_input.hpp"

namespace {

using namespace tbatch;
using namespace tbatch::fuzz;

/// Everything a built tree points to.
struct Trees {
  std::deque<std::vector<std::uint64_t>> buffers;
  std::deque<std::vector<const void*>> buffer_lists;
  std::deque<ArrowArray> arrays;
  std::deque<ArrowSchema> schemas;
  std::deque<std::vector<ArrowArray*>> array_children;
  std::deque<std::vector<ArrowSchema*>> schema_children;
  std::deque<std::string> strings;
  int releases = 0;
};

constexpr const char* formats[] = {"+l", "+L", "+vl", "+vL", "+w:", "+s", "f", "i",
                                   "b",  "g",  "e",   "c",   "u",   "+m", "l", "+w:x"};
constexpr const char* extension_names[] = {"arrow.variable_shape_tensor",
                                           "arrow.fixed_shape_tensor", "other"};
constexpr const char* json_pieces[] = {"{",
                                       "}",
                                       "[",
                                       "]",
                                       ",",
                                       ":",
                                       "\"shape\"",
                                       "\"permutation\"",
                                       "0",
                                       "1",
                                       "2",
                                       "3",
                                       "null",
                                       "-1",
                                       "\"uniform_shape\"",
                                       "\"x\"",
                                       "99999999999999999999",
                                       " ",
                                       "\"dim_names\"",
                                       "true",
                                       "{\"a\":[[[[",
                                       "\\"};

void put_int32(std::string& out, std::size_t n) {
  const auto v = static_cast<std::int32_t>(n);
  out.append(reinterpret_cast<const char*>(&v), 4);
}

std::string metadata_from(FuzzInput& in) {
  std::string json;
  for (int i = in.byte() % 16; i > 0; --i)
    json += json_pieces[in.byte() % std::size(json_pieces)];
  const std::string name = extension_names[in.byte() % std::size(extension_names)];
  std::string out;
  put_int32(out, 2);
  for (const std::string& text :
       {std::string("ARROW:extension:name"), name, std::string("ARROW:extension:metadata"), json}) {
    put_int32(out, text.size());
    out += text;
  }
  return out;
}

/// Builds one schema node and its array node (and their children) from the input.
void build(FuzzInput& in, Trees& t, ArrowSchema& schema, ArrowArray& array, int depth) {
  std::string format = formats[in.byte() % (depth >= 4 ? 1 : std::size(formats))];
  if (depth >= 4) format = "f";
  if (format == "+w:") format += std::to_string(in.byte() % 4);
  const bool list = format == "+l" || format == "+L" || format == "+vl" || format == "+vL";
  const bool fixed = format.starts_with("+w:");
  int64_t children = format == "+s" ? 2 : list || fixed ? 1 : 0;
  int64_t buffers = format.starts_with("+v") ? 3 : fixed || format == "+s" ? 1 : 2;
  if (in.byte() < 8) children += in.boolean() ? 1 : -1;
  if (in.byte() < 8) buffers += in.boolean() ? 1 : -1;
  children = std::max<int64_t>(children, 0);
  buffers = std::max<int64_t>(buffers, 0);

  int64_t length = in.in_range(0, 12), offset = in.in_range(0, 3);
  const std::uint8_t extreme = in.byte();
  if (extreme < 6) length = -1 - extreme;
  if (extreme >= 6 && extreme < 10) {  // offset + length overflows: rejected before any read
    offset = std::numeric_limits<int64_t>::max() - extreme;
    length = 12;
  }
  const int64_t entries = extreme < 10 ? 4 : offset + length + 1;

  auto& pointers = t.buffer_lists.emplace_back();
  const bool large = format == "+L" || format == "+vL" || format == "l" || format == "g";
  for (int64_t b = 0; b < buffers; ++b) {
    if (in.byte() < 24) {
      pointers.push_back(nullptr);
      continue;
    }
    auto& words = t.buffers.emplace_back(std::size_t(entries) + 1, 0);
    if (b == 0) {
      for (auto& w : words)
        w = in.byte() < 200 ? ~std::uint64_t(0) : in.byte();
    } else if (list) {  // offsets or sizes: mostly small, rising
      std::int64_t at = 0;
      for (int64_t i = 0; i < entries; ++i) {
        const std::int64_t step = in.byte() < 230 ? in.in_range(0, 3) : in.raw_index(-4, 40);
        at = std::int64_t(std::uint64_t(at) + std::uint64_t(step));  // wraps, as bad input may
        if (large)
          std::memcpy(reinterpret_cast<char*>(words.data()) + i * 8, &at, 8);
        else
          std::memcpy(reinterpret_cast<char*>(words.data()) + i * 4, &at, 4);
      }
    } else {
      for (auto& w : words)
        w = in.byte() * 0x0101010101ull;
    }
    pointers.push_back(words.data());
  }
  const std::uint8_t nulls = in.byte();
  const int64_t null_count = nulls < 160 ? 0 : nulls < 200 ? -1 : nulls < 250 ? length / 2 : 99;

  auto& schema_kids = t.schema_children.emplace_back();
  auto& array_kids = t.array_children.emplace_back();
  for (int64_t c = 0; c < children; ++c) {
    ArrowSchema& child_schema = t.schemas.emplace_back();
    ArrowArray& child_array = t.arrays.emplace_back();
    build(in, t, child_schema, child_array, depth + 1);
    if (format == "+s") child_schema.name = c == 0 ? (in.byte() < 240 ? "data" : "shape") : "shape";
    schema_kids.push_back(&child_schema);
    array_kids.push_back(&child_array);
  }
  const char* metadata =
      in.byte() < 48 ? t.strings.emplace_back(metadata_from(in)).data() : nullptr;
  schema = ArrowSchema{t.strings.emplace_back(format).c_str(),
                       "",
                       metadata,
                       0,
                       children,
                       schema_kids.empty() ? nullptr : schema_kids.data(),
                       nullptr,
                       [](ArrowSchema* s) { s->release = nullptr; },
                       nullptr};
  array = ArrowArray{length,
                     null_count,
                     offset,
                     buffers,
                     children,
                     pointers.empty() ? nullptr : pointers.data(),
                     array_kids.empty() ? nullptr : array_kids.data(),
                     nullptr,
                     [](ArrowArray* a) { a->release = nullptr; },
                     nullptr};
}

volatile unsigned touched;  // what touch() read, kept so that the reads happen

/// Reads every value of `t` (a tensor over the producer's memory must be readable).
void touch(const AnyTensor& t) {
  const AnyTensor c = t.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  unsigned sum = 0;
  for (index_t i = 0; i < c.numel() * c.element_size(); ++i)
    sum += bytes[i];
  if (c.dtype() == DType::boolean)
    for (index_t i = 0; i < c.numel(); ++i)
      expect(bytes[i] <= 1, "an imported bool is 0 or 1");
  touched = sum;
}

template <class T>
void import_as_batch(ArrowArray* array, const ArrowSchema* schema, arrow::NullPolicy nulls) {
  PackedBatch<T> batch = arrow::import_batch<T>(array, schema, nulls);
  touch(AnyTensor(batch.data()));
  for (index_t i = 0; i < batch.batch_size(); ++i)
    expect(batch.element(i).numel() >= 0, "every element of an imported batch is a view");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzInput in(data, size);
  Trees trees;
  ArrowSchema schema;
  ArrowArray array;
  build(in, trees, schema, array, 0);
  const bool live = in.byte() >= 8;
  array.private_data = &trees.releases;
  void (*counted)(ArrowArray*) = [](ArrowArray* a) {
    ++*static_cast<int*>(a->private_data);
    a->release = nullptr;
  };
  array.release = live ? counted : nullptr;
  const arrow::NullPolicy nulls =
      in.boolean() ? arrow::NullPolicy::empty : arrow::NullPolicy::error;
  switch (in.byte() % 6) {
    case 0:
      accepts([&] { import_as_batch<float>(&array, &schema, nulls); });
      break;
    case 1:
      accepts([&] { import_as_batch<std::int32_t>(&array, &schema, nulls); });
      break;
    case 2:
      accepts([&] { import_as_batch<bool>(&array, &schema, nulls); });
      break;
    case 3:
      accepts([&] { touch(AnyTensor(arrow::import_tensor<float>(&array, &schema))); });
      break;
    case 4:
      accepts([&] { touch(arrow::import_any_tensor(&array, &schema)); });
      break;
    default:
      accepts([&] { arrow::value_dtype(&schema); });
      return 0;  // reads the schema only
  }
  expect(trees.releases == (live ? 1 : 0), "an import releases a live array exactly once");
  return 0;
}
