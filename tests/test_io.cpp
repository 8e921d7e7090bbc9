// safetensors files: round trips of every dtype, owning and mapped, batches and TensorDicts,
// atomic replacement, and every kind of bad file (each a FormatError or FileError, never a
// crash or a huge allocation).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <tbatch/io/safetensors.hpp>

#include "test_support.hpp"

using namespace tbatch;
namespace fs = std::filesystem;

namespace {

/// A fresh scratch folder per test case, removed afterwards.
struct Scratch {
  fs::path dir;
  Scratch() {
    static int count = 0;
    dir = fs::temp_directory_path() /
          ("tbatch_test_io_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  fs::path operator/(const std::string& name) const { return dir / name; }
};

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A file by hand: the 8-byte length, `header` as is, then `data`.
std::string file_with(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[std::size_t(i)] = char((std::uint64_t(header.size()) >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class T>
bool same(const AnyTensor& a, const Tensor<T>& b) {
  return a.holds<T>() && equal(a.get<T>(), b);
}

}  // namespace

TEMPLATE_TEST_CASE("save and load round-trip every dtype, owning and mapped", "[io]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  Scratch scratch;
  std::mt19937 rng(11);
  io::TensorFile file;
  const Tensor<T> matrix = testing::random_tensor<T>(Shape{5, 7}, rng);
  file.tensors.emplace("matrix", AnyTensor(matrix));
  file.tensors.emplace("transposed", AnyTensor(matrix.transpose(0, 1)));  // not contiguous
  file.tensors.emplace("scalar", AnyTensor(Tensor<T>(Shape{}, testing::value_of<T>(3))));
  file.tensors.emplace("empty", AnyTensor(Tensor<T>(Shape{0, 4})));
  file.tensors.emplace("bytes", AnyTensor(Tensor<std::uint8_t>({3}, {1, 2, 3})));
  file.metadata["source"] = "test";
  io::save(scratch / "a.safetensors", file);
  for (io::Mmap mmap : {io::Mmap::no, io::Mmap::yes}) {
    const io::TensorFile back = io::load(scratch / "a.safetensors", mmap);
    CHECK(back.tensors.size() == 5);
    CHECK(same(back.tensors.at("matrix"), matrix));
    CHECK(same(back.tensors.at("transposed"), matrix.transpose(0, 1).contiguous()));
    CHECK(same(back.tensors.at("scalar"), Tensor<T>(Shape{}, testing::value_of<T>(3))));
    CHECK(back.tensors.at("empty").shape() == Shape{0, 4});
    CHECK(back.metadata == file.metadata);
    CHECK(same(io::load_tensor(scratch / "a.safetensors", "matrix", mmap), matrix));
  }
}

TEST_CASE("the file follows the format: sorted keys, aligned tensors, padded header", "[io]") {
  Scratch scratch;
  io::TensorFile file;
  file.tensors.emplace("b", AnyTensor(Tensor<std::int8_t>({3}, {1, 2, 3})));
  file.tensors.emplace("a", AnyTensor(Tensor<double>({2}, {1.5, -2})));
  file.tensors.emplace("c", AnyTensor(Tensor<float>({1}, {4})));
  io::save(scratch / "f.safetensors", file);
  const std::string bytes = bytes_of(scratch / "f.safetensors");
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | std::uint8_t(bytes[std::size_t(i)]);
  CHECK((8 + length) % 8 == 0);
  const std::string header = bytes.substr(8, length);
  // Keys sorted; doubles first, then floats, then bytes, so each starts aligned to its size.
  CHECK(header.rfind(R"({"a":{"data_offsets":[0,16],"dtype":"F64","shape":[2]},)"
                     R"("b":{"data_offsets":[20,23],"dtype":"I8","shape":[3]},)"
                     R"("c":{"data_offsets":[16,20],"dtype":"F32","shape":[1]}})",
                     0) == 0);
  CHECK(bytes.size() == 8 + length + 23);
}

TEST_CASE("a mapped load views the file; writes stay in the process", "[io]") {
  Scratch scratch;
  io::TensorFile file;
  file.tensors.emplace("x", AnyTensor(Tensor<float>({4}, {1, 2, 3, 4})));
  io::save(scratch / "m.safetensors", file);
  const std::string before = bytes_of(scratch / "m.safetensors");
  Tensor<float> x;
  {
    const io::TensorFile mapped = io::load(scratch / "m.safetensors", io::Mmap::yes);
    x = mapped.tensors.at("x").get<float>();
  }
  // The tensor keeps the mapping alive after the TensorFile is gone.
  CHECK(equal(x, Tensor<float>({4}, {1, 2, 3, 4})));
  x.index_put({0}, Tensor<float>(Shape{}, 9.f));
  CHECK(x(0) == 9.f);
  CHECK(bytes_of(scratch / "m.safetensors") == before);
}

TEST_CASE("batches round-trip in their own layout", "[io][batch]") {
  Scratch scratch;
  std::mt19937 rng(5);
  std::vector<Tensor<float>> clouds;
  for (int i = 0; i < 6; ++i)
    clouds.push_back(testing::random_tensor<float>(
        Shape{std::uniform_int_distribution<index_t>(0, 9)(rng), 3}, rng));
  const PackedBatch<float> packed = list_to_packed(clouds);
  const PaddedBatch<float> padded = list_to_padded(clouds, -1.f);
  const ExactBatch<std::int64_t> exact(testing::iota<std::int64_t>(Shape{4, 2, 3}));
  io::TensorFile file;
  io::put(file, "packed", packed);
  io::put(file, "padded", padded);
  io::put(file, "exact", exact);
  CHECK(file.metadata.at("packed.layout") == "packed");
  io::save(scratch / "b.safetensors", file);
  for (io::Mmap mmap : {io::Mmap::no, io::Mmap::yes}) {
    const io::TensorFile back = io::load(scratch / "b.safetensors", mmap);
    const auto p = io::get<PackedBatch<float>>(back, "packed");
    CHECK(equal(p.data(), packed.data()));
    CHECK(equal(p.first_idx(), packed.first_idx()));
    for (index_t i = 0; i < p.batch_size(); ++i)
      CHECK(equal(p.element(i), clouds[std::size_t(i)]));
    CHECK(equal(io::get<PaddedBatch<float>>(back, "padded").data(), padded.data()));
    CHECK(equal(io::get<ExactBatch<std::int64_t>>(back, "exact").data(), exact.data()));
  }
  TBATCH_CHECK_THROWS_WITH(io::get<PaddedBatch<float>>(file, "packed"), TypeError,
                           "io::get: batch 'packed' is stored packed, not padded");
  TBATCH_CHECK_THROWS_WITH(io::get<PackedBatch<double>>(file, "packed"), TypeError,
                           "io::get: tensor 'packed' has dtype float32, not the requested float64");
  TBATCH_CHECK_THROWS_WITH(io::get<PackedBatch<float>>(file, "missing"), FormatError,
                           "io::get: the file has no batch 'missing'");
  // A batch put under a name replaces the batch there, all its tensors; never another tensor.
  io::TensorFile replaced = file;
  io::put(replaced, "packed", ExactBatch<float>(Tensor<float>(Shape{2, 3})));
  CHECK(replaced.tensors.count("packed.first_idx") == 0);
  CHECK(replaced.tensors.count("packed.shape_per_tensor") == 0);
  CHECK(replaced.metadata.at("packed.layout") == "exact");
  replaced.tensors.emplace("plain", AnyTensor(Tensor<float>(Shape{1})));
  TBATCH_CHECK_THROWS_WITH(io::put(replaced, "plain", exact), ValueError,
                           "io::put: the file already holds a tensor 'plain' that is not part of "
                           "a batch 'plain'");
  TBATCH_CHECK_THROWS_WITH(io::put(replaced, TensorDict({{"plain", Tensor<float>(Shape{1})}})),
                           ValueError, "io::put: the file already holds a tensor 'plain'");
  CHECK(replaced.metadata.count("tbatch.tensordict") == 0);  // all or nothing
  io::put(replaced, TensorDict({{"other", Tensor<float>(Shape{1})}}));
  TBATCH_CHECK_THROWS_WITH(io::put(replaced, TensorDict({{"more", Tensor<float>(Shape{1})}})),
                           ValueError, "io::put: the file holds a TensorDict already");
  io::TensorFile broken = file;
  broken.tensors.erase("packed.first_idx");
  TBATCH_CHECK_THROWS_WITH(io::get<PackedBatch<float>>(broken, "packed"), FormatError,
                           "io::get: the file has no tensor 'packed.first_idx'");
  broken = file;
  broken.tensors.insert_or_assign("packed.first_idx",
                                  AnyTensor(Tensor<index_t>({7}, {0, 1, 2, 3, 4, 5, 99})));
  CHECK_THROWS_AS(io::get<PackedBatch<float>>(broken, "packed"), Error);
}

TEST_CASE("TensorDicts round-trip with nested keys, batch sizes and names", "[io][tensor_dict]") {
  Scratch scratch;
  TensorDict td({{"points", testing::iota<float>(Shape{2, 3, 4})},
                 {"robot", TensorDict({{"joints", testing::iota<std::int32_t>(Shape{2, 3, 5})},
                                       {"empty", TensorDict(Shape{2, 3})}},
                                      {2, 3})},
                 {"mask", Tensor<bool>(Shape{2, 3}, true)}},
                {2, 3}, {"batch", std::nullopt});
  io::save(scratch / "d.safetensors", td);
  for (io::Mmap mmap : {io::Mmap::no, io::Mmap::yes}) {
    const TensorDict back = io::load_tensordict(scratch / "d.safetensors", mmap);
    CHECK(back.batch_size() == td.batch_size());
    CHECK(back.names() == td.names());
    CHECK(back.keys() == td.keys());
    CHECK(equal(back.get<float>("points"), td.get<float>("points")));
    CHECK(equal(back.get<std::int32_t>({"robot", "joints"}),
                td.get<std::int32_t>({"robot", "joints"})));
    CHECK(back.get_dict("robot").keys() == std::vector<std::string>{"joints", "empty"});
    CHECK(equal(back.get<bool>("mask"), td.get<bool>("mask")));
  }
  const io::TensorFile file = io::load(scratch / "d.safetensors");
  CHECK(file.tensors.count("robot.joints") == 1);
  TBATCH_CHECK_THROWS_WITH(
      io::save(scratch / "e.safetensors", TensorDict({{"a.b", Tensor<float>(Shape{1})}})),
      ValueError, "io::put: key 'a.b' contains '.'");
  TBATCH_CHECK_THROWS_WITH(io::get_tensordict(io::TensorFile{}), FormatError,
                           "io::get_tensordict: the file has no TensorDict");
}

TEST_CASE("save replaces the file whole, or leaves it as it was", "[io][errors]") {
  Scratch scratch;
  io::TensorFile file;
  file.tensors.emplace("x", AnyTensor(Tensor<float>({2}, {1, 2})));
  io::save(scratch / "s.safetensors", file);
  const std::string first = bytes_of(scratch / "s.safetensors");
  io::TensorFile bad = file;
  bad.tensors.emplace("__metadata__", AnyTensor(Tensor<float>(Shape{1})));
  TBATCH_CHECK_THROWS_WITH(io::save(scratch / "s.safetensors", bad), ValueError,
                           "io::save: tensor name '__metadata__' is not allowed");
  CHECK(bytes_of(scratch / "s.safetensors") == first);
  TBATCH_CHECK_THROWS_WITH(io::save(scratch / "no" / "such" / "dir.safetensors", file), FileError,
                           "io::save: cannot create a file beside");
  io::TensorFile not_utf8 = file;
  not_utf8.tensors.emplace("bad\xff", AnyTensor(Tensor<float>(Shape{1})));
  TBATCH_CHECK_THROWS_WITH(io::save(scratch / "s.safetensors", not_utf8), ValueError,
                           "io::save: a tensor name or metadata string is not valid UTF-8");
  CHECK(bytes_of(scratch / "s.safetensors") == first);
  file.tensors.emplace("y", AnyTensor(Tensor<std::int16_t>({1}, {7})));
  io::save(scratch / "s.safetensors", file);
  CHECK(io::load(scratch / "s.safetensors").tensors.size() == 2);
  // No temporary is left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(scratch.dir))
    ++entries;
  CHECK(entries == 1);
  TBATCH_CHECK_THROWS_WITH(io::load(scratch / "missing.safetensors"), FileError,
                           "io::load: cannot open");
  TBATCH_CHECK_THROWS_WITH(io::load(scratch.dir), FileError, "is not a regular file");
  TBATCH_CHECK_THROWS_WITH(io::load_tensor(scratch / "s.safetensors", "z"), KeyError,
                           "io::load_tensor: file");
}

TEST_CASE("bad files are FormatErrors", "[io][errors]") {
  Scratch scratch;
  const fs::path path = scratch / "bad.safetensors";
  auto rejects = [&](const std::string& bytes, const std::string& message) {
    write_bytes(path, bytes);
    for (io::Mmap mmap : {io::Mmap::no, io::Mmap::yes})
      TBATCH_CHECK_THROWS_WITH(io::load(path, mmap), FormatError, message);
    TBATCH_CHECK_THROWS_WITH(io::parse(bytes.data(), bytes.size()), FormatError, message);
  };
  const std::string good = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data(8, '\0');
  rejects("", "has 0 bytes; a safetensors file starts with an 8-byte header length");
  rejects("abc", "has 3 bytes");
  rejects(file_with(good, data).substr(0, 20), "declares a header of");
  rejects(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}",
          "declares a header of 9223372036854775807 bytes");
  rejects(file_with("{not json", ""), "has a header that is not a JSON object");
  rejects(file_with("[1, 2]", ""), "has a header that is not a JSON object");
  rejects(file_with(R"({"x":{"dtype":"U64","shape":[1],"data_offsets":[0,8]}})", data),
          "tensor 'x' has dtype U64, which tbatch does not hold");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data),
          "tensor 'x' has shape [3] of dtype float32 but 8 bytes of data");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data),
          "has a shape entry that is not a size: -2");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})",
                    data),
          "has a shape whose size overflows");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", data),
          "has data_offsets [0, 16] outside the 8 data bytes");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data),
          "(or reversed)");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                    R"("y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                    data),
          "offsets must tile the data without overlap or gap");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data),
          "tensor 'x' starts at data byte 4 but the tensors before it end at 0");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data),
          "the tensors cover 4 data bytes but the file has 8");
  rejects(file_with(R"({"x":{"shape":[2],"data_offsets":[0,8]}})", data), "has no dtype string");
  rejects(file_with(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data),
          "tensor '' has an empty name");
  rejects(file_with(R"({"x":{"dtype":"F32","data_offsets":[0,8]}})", data), "has no shape array");
  rejects(file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data),
          "has no data_offsets pair of sizes");
  rejects(file_with(R"({"__metadata__":{"k":1}})", ""), "__metadata__ entry 'k' is not a string");
  // A header not padded to 8 bytes is valid; mapped tensors that are not aligned are copied.
  const std::string unaligned = file_with(good + " ", std::string("\0\0\x80\x3f\0\0\0\x40", 8));
  write_bytes(path, unaligned);
  CHECK(equal(io::load(path, io::Mmap::yes).tensors.at("x").get<float>(),
              Tensor<float>({2}, {1, 2})));
  CHECK(equal(io::parse(unaligned.data(), unaligned.size()).tensors.at("x").get<float>(),
              Tensor<float>({2}, {1, 2})));
}

TEST_CASE("RaggedTensorDicts round-trip, padded and packed", "[io][tensor_dict]") {
  Scratch scratch;
  std::vector<TensorDict> tds;
  for (index_t i = 0; i < 4; ++i) {
    const index_t points = 1 + i * 2;
    tds.push_back(TensorDict(
        {{"points", testing::iota<float>(Shape{points, 3})},
         {"labels", testing::iota<std::int64_t>(Shape{points})},  // ragged, no feature dim
         {"pose", testing::iota<double>(Shape{4})},               // dense
         {"meta", TensorDict({{"ids", testing::iota<std::int32_t>(Shape{i + 1, 2})}})}}));
  }
  for (RaggedLayout layout : {RaggedLayout::padded, RaggedLayout::packed}) {
    const RaggedTensorDict ragged = TensorDict::stack_ragged(tds, layout);
    io::TensorFile file;
    io::put(file, ragged);
    io::save(scratch / "r.safetensors", file);
    for (io::Mmap mmap : {io::Mmap::no, io::Mmap::yes}) {
      const RaggedTensorDict back =
          io::get_ragged_tensordict(io::load(scratch / "r.safetensors", mmap));
      CHECK(back.layout() == layout);
      CHECK(back.batch_size() == ragged.batch_size());
      CHECK(back.keys() == ragged.keys());
      for (index_t i = 0; i < 4; ++i) {
        const TensorDict element = back.element(i);
        CHECK(equal(element.get<float>("points"), tds[std::size_t(i)].get<float>("points")));
        CHECK(equal(element.get<std::int64_t>("labels"),
                    tds[std::size_t(i)].get<std::int64_t>("labels")));
        CHECK(equal(element.get<double>("pose"), tds[std::size_t(i)].get<double>("pose")));
        CHECK(equal(element.get<std::int32_t>({"meta", "ids"}),
                    tds[std::size_t(i)].get<std::int32_t>({"meta", "ids"})));
      }
    }
  }
  const RaggedTensorDict ragged = TensorDict::stack_ragged(tds, RaggedLayout::packed);
  io::TensorFile file;
  io::put(file, ragged);
  TBATCH_CHECK_THROWS_WITH(io::put(file, ragged), ValueError,
                           "io::put: the file holds a RaggedTensorDict already");
  io::TensorFile broken = file;
  broken.tensors.insert_or_assign("points.first_idx",
                                  AnyTensor(Tensor<index_t>({5}, {0, 1, 4, 9, 99})));
  CHECK_THROWS_AS(io::get_ragged_tensordict(broken), Error);
  broken = file;
  broken.tensors.erase("labels.shape_per_tensor");
  TBATCH_CHECK_THROWS_WITH(io::get_ragged_tensordict(broken), FormatError,
                           "the file has no tensor 'labels.shape_per_tensor'");
  broken = file;
  broken.metadata["tbatch.ragged_tensordict"] = R"({"layout":"packed","batch_size":[4]})";
  TBATCH_CHECK_THROWS_WITH(io::get_ragged_tensordict(broken), FormatError,
                           "lacks batch_size, element_batch_sizes or items");
}

namespace {

/// `depth` nested JSON arrays around a 0: the text a hostile header puts where a number goes.
std::string nested_arrays(std::size_t depth) {
  return std::string(depth, '[') + "0" + std::string(depth, ']');
}

/// Checks that loading `bytes` (as a file, copied and mapped, and from memory) is a FormatError
/// holding `message`.
void check_rejected(const fs::path& path, const std::string& bytes, const std::string& message) {
  write_bytes(path, bytes);
  for (io::Mmap mmap : {io::Mmap::no, io::Mmap::yes})
    TBATCH_CHECK_THROWS_WITH(io::load(path, mmap), FormatError, message);
  TBATCH_CHECK_THROWS_WITH(io::parse(bytes.data(), bytes.size()), FormatError, message);
}

}  // namespace

TEST_CASE("deeply nested JSON in a header or a structure is a FormatError, not a crash",
          "[io][errors]") {
  Scratch scratch;
  const fs::path path = scratch / "deep.safetensors";
  for (std::size_t depth : {std::size_t(100'000), std::size_t(1'000'000)}) {
    INFO("depth " << depth);
    check_rejected(path,
                   file_with(R"({"x":{"dtype":"F32","shape":)" + nested_arrays(depth) +
                                 R"(,"data_offsets":[0,0]}})",
                             ""),
                   "tensor 'x' has a shape entry that is not a size: an array");
    // Unknown fields are skipped as the reference reader skips them, but not at any depth.
    check_rejected(path,
                   file_with(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"extra":)" +
                                 nested_arrays(depth) + "}}",
                             ""),
                   "nests JSON deeper than");
    check_rejected(path, file_with(R"({"__metadata__":{"k":)" + nested_arrays(depth) + "}}", ""),
                   "__metadata__ entry 'k' is not a string");
    io::TensorFile file;
    file.metadata["tbatch.tensordict"] = nested_arrays(depth);
    file.metadata["tbatch.ragged_tensordict"] = "{\"layout\":" + nested_arrays(depth) + "}";
    TBATCH_CHECK_THROWS_WITH(io::get_tensordict(file), FormatError,
                             "io::get_tensordict: the metadata entry 'tbatch.tensordict' nests "
                             "JSON deeper than");
    TBATCH_CHECK_THROWS_WITH(io::get_ragged_tensordict(file), FormatError,
                             "io::get_ragged_tensordict: the metadata entry "
                             "'tbatch.ragged_tensordict' nests JSON deeper than");
  }
}

TEST_CASE("BOOL bytes other than 0 and 1 in a file are read as true", "[io]") {
  Scratch scratch;
  const fs::path path = scratch / "bool.safetensors";
  const std::string stored("\x00\x01\x02\xff\x00\x80\x01\x00", 8);
  const std::string bytes =
      file_with(R"({"b":{"dtype":"BOOL","shape":[8],"data_offsets":[0,8]}})", stored);
  write_bytes(path, bytes);
  const unsigned char expected[8] = {0, 1, 1, 1, 0, 1, 1, 0};
  auto check = [&](const AnyTensor& t) {
    REQUIRE(t.dtype() == DType::boolean);
    const auto* read = static_cast<const unsigned char*>(t.data_ptr());
    for (int i = 0; i < 8; ++i)
      CHECK(int(read[i]) == int(expected[i]));
    CHECK(equal(t.get<bool>(),
                Tensor<bool>({8}, {false, true, true, true, false, true, true, false})));
  };
  check(io::parse(bytes.data(), bytes.size()).tensors.at("b"));
  check(io::load(path).tensors.at("b"));
  check(io::load(path, io::Mmap::yes).tensors.at("b"));
  check(io::load_tensor(path, "b", io::Mmap::yes));
  CHECK(bytes_of(path) == bytes);  // the mapping is private: the file keeps its bytes
}

TEST_CASE("a header is one JSON object with JSON whitespace around it, as the reference reads it",
          "[io][errors]") {
  Scratch scratch;
  const fs::path path = scratch / "pad.safetensors";
  const std::string good = R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  const std::string data("\x05\x06", 2);
  check_rejected(path, file_with(good + std::string("\0garbage", 8), data), "a NUL byte");
  check_rejected(path, file_with(good + std::string(6, '\0'), data), "a NUL byte");
  check_rejected(path, file_with("\xEF\xBB\xBF" + good, data),
                 "has a header that is not a JSON object");
  check_rejected(path, file_with(good + "x", data), "has a header that is not a JSON object");
  check_rejected(path, file_with(good + "{}", data), "has a header that is not a JSON object");
  for (const std::string& header : {good + "    ", " \t\r\n" + good + " \n\t\r "}) {
    const std::string bytes = file_with(header, data);
    CHECK(equal(io::parse(bytes.data(), bytes.size()).tensors.at("x").get<std::uint8_t>(),
                Tensor<std::uint8_t>({2}, {5, 6})));
  }
}

TEST_CASE("a file's tensors have at most 64 dims; loading allocates in proportion to the file",
          "[io][errors]") {
  Scratch scratch;
  const fs::path path = scratch / "rank.safetensors";
  auto ones = [](std::size_t rank, const char* size) {
    std::string shape = "[";
    for (std::size_t d = 0; d < rank; ++d)
      shape += d == 0 ? size : std::string(",") + size;
    return shape + "]";
  };
  const std::string rank64 = file_with(
      R"({"x":{"dtype":"U8","shape":)" + ones(64, "1") + R"(,"data_offsets":[0,1]}})", "\x07");
  CHECK(io::parse(rank64.data(), rank64.size()).tensors.at("x").dim() == 64);
  check_rejected(
      path,
      file_with(R"({"x":{"dtype":"U8","shape":)" + ones(65, "1") + R"(,"data_offsets":[0,1]}})",
                "\x07"),
      "tensor 'x' has a shape of more than 64 dims");
  // Five million dims of size 0, a 10 MB header: rejected at the 65th dim.
  check_rejected(path,
                 file_with(R"({"x":{"dtype":"U8","shape":)" + ones(5'000'000, "0") +
                               R"(,"data_offsets":[0,0]}})",
                           ""),
                 "tensor 'x' has a shape of more than 64 dims");
  io::TensorFile file;
  file.tensors.emplace("deep", AnyTensor(Tensor<float>(Shape::filled(65, 1))));
  TBATCH_CHECK_THROWS_WITH(io::save(scratch / "deep.safetensors", file), ValueError,
                           "io::save: tensor 'deep' has 65 dims; a file holds at most 64");
  CHECK_FALSE(fs::exists(scratch / "deep.safetensors"));
}

TEST_CASE("a file's shape whose strides overflow is a FormatError naming file and tensor",
          "[io][errors]") {
  Scratch scratch;
  const fs::path path = scratch / "huge.safetensors";
  check_rejected(path,
                 file_with(R"({"x":{"dtype":"F32","shape":[0,4611686018427387904,)"
                           R"(4611686018427387904],"data_offsets":[0,0]}})",
                           ""),
                 "tensor 'x' has a shape whose size overflows: [0, 4611686018427387904, "
                 "4611686018427387904]");
  TBATCH_CHECK_THROWS_WITH(io::load(path), FormatError, "huge.safetensors: tensor 'x'");
}

TEST_CASE("io::get of another layout or dtype than stored is a TypeError naming the batch",
          "[io][errors]") {
  io::TensorFile file;
  io::put(file, "clouds", list_to_packed(std::vector<Tensor<float>>{Tensor<float>(Shape{2, 3})}));
  TBATCH_CHECK_THROWS_WITH(io::get<PaddedBatch<float>>(file, "clouds"), TypeError,
                           "io::get: batch 'clouds' is stored packed, not padded");
  TBATCH_CHECK_THROWS_WITH(io::get<PackedBatch<double>>(file, "clouds"), TypeError,
                           "io::get: tensor 'clouds' has dtype float32, not the requested float64");
  // A metadata tensor of another dtype is a bad file, not a caller's mistake.
  file.tensors.insert_or_assign("clouds.first_idx", AnyTensor(Tensor<float>({2}, {0, 2})));
  TBATCH_CHECK_THROWS_WITH(io::get<PackedBatch<float>>(file, "clouds"), FormatError,
                           "io::get: tensor 'clouds.first_idx' has dtype float32; expected int64");
}

TEST_CASE("loading a FIFO is a FileError at once, not a wait for a writer", "[io][errors]") {
  Scratch scratch;
  const fs::path fifo = scratch / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // In a child process, so that a load that blocks is killed instead of hanging the suite.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 1;
    try {
      io::load(fifo);
    } catch (const FileError& e) {
      code = std::string(e.what()).find("is not a regular file") != std::string::npos ? 0 : 2;
    } catch (...) {
      code = 3;
    }
    std::_Exit(code);
  }
  int status = 0;
  pid_t done = 0;
  for (int waited_ms = 0; waited_ms < 20'000 && done == 0; waited_ms += 10) {
    done = ::waitpid(child, &status, WNOHANG);
    if (done == 0) ::usleep(10'000);
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL("io::load of a FIFO blocked for 20 s");
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("save writes a file whose name has the most characters a name may have", "[io][errors]") {
  Scratch scratch;
  const std::string name(255, 'n');
  io::TensorFile file;
  file.tensors.emplace("x", AnyTensor(Tensor<float>({2}, {1, 2})));
  io::save(scratch / name, file);
  CHECK(equal(io::load(scratch / name).tensors.at("x").get<float>(), Tensor<float>({2}, {1, 2})));
  io::save(scratch / name, file);  // replacing it too
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(scratch.dir))
    ++entries;
  CHECK(entries == 1);
}

namespace {

/// `file` with its RaggedTensorDict structure changed by `edit`.
template <class Edit>
io::TensorFile with_structure(io::TensorFile file, Edit edit) {
  std::string& text = file.metadata.at("tbatch.ragged_tensordict");
  nlohmann::json structure = nlohmann::json::parse(text);
  edit(structure);
  text = structure.dump();
  return file;
}

nlohmann::json& item_of(nlohmann::json& structure, const std::string& key) {
  for (nlohmann::json& item : structure["items"])
    if (item["key"] == key) return item;
  throw std::logic_error("no item " + key);
}

}  // namespace

TEST_CASE("a RaggedTensorDict structure that contradicts its tensors is a FormatError",
          "[io][tensor_dict][errors]") {
  std::vector<TensorDict> tds;
  for (index_t i = 0; i < 4; ++i)
    tds.push_back(TensorDict({{"points", testing::iota<float>(Shape{1 + 2 * i, 3})},
                              {"labels", testing::iota<std::int64_t>(Shape{1 + 2 * i})},
                              {"pose", testing::iota<double>(Shape{4})}}));
  for (RaggedLayout layout : {RaggedLayout::padded, RaggedLayout::packed}) {
    io::TensorFile file;
    io::put(file, TensorDict::stack_ragged(tds, layout));
    auto rejects = [&](const io::TensorFile& broken, const std::string& message) {
      TBATCH_CHECK_THROWS_WITH(io::get_ragged_tensordict(broken), FormatError,
                               "io::get_ragged_tensordict: the RaggedTensorDict structure in the "
                               "metadata " +
                                   message);
    };
    rejects(with_structure(file, [](auto& s) { item_of(s, "points")["unit_last_dim"] = true; }),
            "has entry 'points' with unit_last_dim set, but its data's last dim is 3, not 1");
    rejects(with_structure(file, [](auto& s) { item_of(s, "pose")["unit_last_dim"] = true; }),
            "has dense entry 'pose' with unit_last_dim set");
    rejects(with_structure(file, [](auto& s) { s["items"].push_back(s["items"][0]); }),
            "has key 'points' twice");
    rejects(with_structure(file,
                           [](auto& s) {
                             s["batch_size"] = {0};
                             s["element_batch_sizes"] = nlohmann::json::array();
                             s["items"] = nlohmann::json::array();
                           }),
            "has batch_size[0] 0; a RaggedTensorDict stacks at least one TensorDict");
    // Without the flag, the file describes tensors with a trailing dim of size 1, which a
    // RaggedTensorDict of such tensors stores the same way: it loads as that.
    const RaggedTensorDict plain = io::get_ragged_tensordict(
        with_structure(file, [](auto& s) { item_of(s, "labels")["unit_last_dim"] = false; }));
    CHECK(plain.element(2).get<std::int64_t>("labels").shape() == Shape{5, 1});
  }
  // Shapes that do not differ: the flag stored on an entry whose last dims are all equal, and
  // a ragged entry whose tensors all have one shape (stack_ragged stores both otherwise).
  io::TensorFile file;
  io::put(file, TensorDict::stack_ragged(tds, RaggedLayout::padded));
  file.tensors.insert_or_assign("points.shape_per_tensor",
                                AnyTensor(Tensor<index_t>({4, 1}, {7, 7, 7, 7})));
  TBATCH_CHECK_THROWS_WITH(io::get_ragged_tensordict(file), FormatError,
                           "has ragged entry 'points' whose tensors all have shape [7, 3]");
  std::vector<TensorDict> same_last;
  for (index_t i = 0; i < 3; ++i)
    same_last.push_back(TensorDict({{"v", testing::iota<float>(Shape{1 + i, 2, 1})}}));
  io::TensorFile unit;
  io::put(unit, TensorDict::stack_ragged(same_last, RaggedLayout::packed));
  TBATCH_CHECK_THROWS_WITH(
      io::get_ragged_tensordict(
          with_structure(unit, [](auto& s) { item_of(s, "v")["unit_last_dim"] = true; })),
      FormatError, "has entry 'v' with unit_last_dim set, but its tensors' last dims are all 2");
}

TEST_CASE("RaggedTensorDict batch sizes that contradict the data are a FormatError at load",
          "[io][tensor_dict][errors]") {
  std::vector<TensorDict> tds;
  for (index_t i = 0; i < 4; ++i) {
    const index_t n = 1 + 2 * i;
    tds.push_back(
        TensorDict({{"points", testing::iota<float>(Shape{n, 3})},
                    {"meta", TensorDict({{"ids", testing::iota<std::int32_t>(Shape{n})}}, {n})}},
                   {n}));
  }
  for (RaggedLayout layout : {RaggedLayout::padded, RaggedLayout::packed}) {
    io::TensorFile file;
    io::put(file, TensorDict::stack_ragged(tds, layout));
    const RaggedTensorDict back = io::get_ragged_tensordict(file);
    CHECK(back.batch_size() == std::vector<index_t>{4, -1});
    CHECK(equal(back.element(3).get<float>("points"), tds[3].get<float>("points")));
    auto rejects = [&](const io::TensorFile& broken, const std::string& message) {
      TBATCH_CHECK_THROWS_WITH(io::get_ragged_tensordict(broken), FormatError, message);
    };
    rejects(with_structure(file, [](auto& s) { s["element_batch_sizes"][0] = {2}; }),
            "has element 0 of batch size [2], but its entry 'points' has shape [1, 3]");
    rejects(with_structure(file,
                           [](auto& s) {
                             s["batch_size"] = {4, 3};
                           }),
            "has batch_size [4, 3], but its elements' batch sizes make it [4, -1]");
    rejects(with_structure(file,
                           [](auto& s) {
                             for (auto& item : s["items"])
                               if (item.contains("dict"))
                                 item["dict"]["element_batch_sizes"][1] = {2};
                           }),
            "has element 1 of batch size [2], but its parent's is [3] (at 'meta.')");
    rejects(
        with_structure(file, [](auto& s) { s["element_batch_sizes"][1] = {4611686018427387904}; }),
        "has element 1 of batch size [4611686018427387904]");
  }
}

TEST_CASE("RaggedTensorDict::from_stored takes back what stored gives, and checks it",
          "[io][tensor_dict][errors]") {
  std::vector<TensorDict> tds;
  for (index_t i = 0; i < 3; ++i)
    tds.push_back(
        TensorDict({{"points", testing::iota<float>(Shape{1 + i, 3})},
                    {"meta", TensorDict({{"id", testing::iota<std::int32_t>(Shape{2})}})}}));
  auto reject = [](const std::string& prefix, const std::string& why) {
    tbatch::detail::fail<ValueError>("test", {prefix, "|", why});
  };
  for (RaggedLayout layout : {RaggedLayout::padded, RaggedLayout::packed}) {
    const RaggedTensorDict ragged = TensorDict::stack_ragged(tds, layout);
    const RaggedTensorDict back = RaggedTensorDict::from_stored(ragged.stored(), layout, reject);
    CHECK(back.batch_size() == ragged.batch_size());
    for (index_t i = 0; i < 3; ++i) {
      CHECK(equal(back.element(i).get<float>("points"), tds[std::size_t(i)].get<float>("points")));
      CHECK(equal(back.element(i).get<std::int32_t>({"meta", "id"}),
                  tds[std::size_t(i)].get<std::int32_t>({"meta", "id"})));
    }
    RaggedTensorDict::Stored twice = ragged.stored();
    twice.items.push_back(twice.items[0]);
    TBATCH_CHECK_THROWS_WITH(RaggedTensorDict::from_stored(twice, layout, reject), ValueError,
                             "test: |has key 'points' twice");
    RaggedTensorDict::Stored nested = ragged.stored();
    for (RaggedTensorDict::Stored::Item& item : nested.items)
      if (item.dict) {
        RaggedTensorDict::Stored inner = *item.dict;
        inner.element_batch_sizes.pop_back();
        item.dict = std::make_shared<const RaggedTensorDict::Stored>(inner);
      }
    TBATCH_CHECK_THROWS_WITH(RaggedTensorDict::from_stored(nested, layout, reject), ValueError,
                             "test: meta.|has a number of element batch sizes other than");
    RaggedTensorDict::Stored empty = ragged.stored();
    empty.items.push_back({"nothing", std::nullopt, nullptr});
    TBATCH_CHECK_THROWS_WITH(RaggedTensorDict::from_stored(empty, layout, reject), ValueError,
                             "has item 'nothing' that is neither a tensor nor a dict");
    empty.batch_size.clear();
    TBATCH_CHECK_THROWS_WITH(RaggedTensorDict::from_stored(empty, layout, reject), ValueError,
                             "has an empty batch_size");
  }
}
