// safetensors files: round trips of every dtype, owning and mapped, batches and TensorDicts,
// atomic replacement, and every kind of bad file (each a FormatError or FileError, never a
// crash or a huge allocation).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
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
  return a.holds<T>() && a.get<T>() == b;
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
  CHECK(x == Tensor<float>({4}, {1, 2, 3, 4}));
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
    CHECK(p.data() == packed.data());
    CHECK(p.first_idx() == packed.first_idx());
    for (index_t i = 0; i < p.batch_size(); ++i)
      CHECK(p.element(i) == clouds[std::size_t(i)]);
    CHECK(io::get<PaddedBatch<float>>(back, "padded").data() == padded.data());
    CHECK(io::get<ExactBatch<std::int64_t>>(back, "exact").data() == exact.data());
  }
  TBATCH_CHECK_THROWS_WITH(io::get<PaddedBatch<float>>(file, "packed"), FormatError,
                           "io::get: batch 'packed' is stored packed, not padded");
  TBATCH_CHECK_THROWS_WITH(io::get<PackedBatch<double>>(file, "packed"), TypeError,
                           "io::get: the tensor has dtype float32, not the requested float64");
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
    CHECK(back.get<float>("points") == td.get<float>("points"));
    CHECK(back.get<std::int32_t>({"robot", "joints"}) == td.get<std::int32_t>({"robot", "joints"}));
    CHECK(back.get_dict("robot").keys() == std::vector<std::string>{"joints", "empty"});
    CHECK(back.get<bool>("mask") == td.get<bool>("mask"));
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
  CHECK(io::load(path, io::Mmap::yes).tensors.at("x").get<float>() == Tensor<float>({2}, {1, 2}));
  CHECK(io::parse(unaligned.data(), unaligned.size()).tensors.at("x").get<float>() ==
        Tensor<float>({2}, {1, 2}));
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
        CHECK(element.get<float>("points") == tds[std::size_t(i)].get<float>("points"));
        CHECK(element.get<std::int64_t>("labels") ==
              tds[std::size_t(i)].get<std::int64_t>("labels"));
        CHECK(element.get<double>("pose") == tds[std::size_t(i)].get<double>("pose"));
        CHECK(element.get<std::int32_t>({"meta", "ids"}) ==
              tds[std::size_t(i)].get<std::int32_t>({"meta", "ids"}));
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
