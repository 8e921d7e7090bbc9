// io_interop: the tbatch half of the safetensors interchange check run by io_interop.py.
//
//   io_interop write PATH   writes a file holding one tensor per dtype (scalar, empty and
//                           non-contiguous sources among them), a metadata entry and a packed
//                           batch, for the Python side to read by hand;
//   io_interop check PATH   reads the file the Python side wrote by hand, copied and mapped,
//                           and checks every tensor.
//
// Every tensor holds value(i) at row-major position i, the formula io_interop.py uses too.
// Exits 0 when everything matches, 1 with the first mismatch on stderr otherwise, 2 for a bad
// command line.

#include <exception>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <tbatch/io/safetensors.hpp>
#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen.hpp>  // Eigen::half values, Eigen maps

using tbatch::AnyTensor;
using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::Shape;
using tbatch::Tensor;
namespace io = tbatch::io;

namespace {

/// The element at row-major position i of every tensor (as in io_interop.py): -3..7 for signed
/// and floating dtypes (exact in float16 and bfloat16), 0..10 for unsigned ones, odd for bool.
template <class T>
T value(index_t i) {
  const index_t base = i * 7 % 11;
  if constexpr (std::is_same_v<T, bool>)
    return base % 2 == 1;
  else if constexpr (std::is_unsigned_v<T>)
    return static_cast<T>(base);
  else if constexpr (tbatch::FloatingElement<T>)
    return static_cast<T>(static_cast<float>(base - 3));  // float16 and bfloat16 convert from float
  else
    return static_cast<T>(base - 3);
}

template <class T>
Tensor<T> formula_tensor(const Shape& shape) {
  Tensor<T> out = Tensor<T>::empty(shape);
  for (index_t i = 0; i < out.numel(); ++i)
    out.data()[i] = value<T>(i);
  return out;
}

/// Calls visit(std::type_identity<T>{}, name, shape) for each tensor both directions hold: the
/// TENSORS table of io_interop.py.
template <class Visit>
void for_each_formula_tensor(Visit&& visit) {
  visit(std::type_identity<float>{}, "f32", Shape{2, 3});
  visit(std::type_identity<float>{}, "f32_scalar", Shape{});
  visit(std::type_identity<float>{}, "f32_empty", Shape{0, 4});
  visit(std::type_identity<double>{}, "f64", Shape{5});
  visit(std::type_identity<Eigen::half>{}, "f16", Shape{2, 2, 2});
  visit(std::type_identity<Eigen::bfloat16>{}, "bf16", Shape{3, 2});
  visit(std::type_identity<std::int8_t>{}, "i8", Shape{7});
  visit(std::type_identity<std::int16_t>{}, "i16", Shape{2, 5});
  visit(std::type_identity<std::int32_t>{}, "i32", Shape{3, 1, 2});
  visit(std::type_identity<std::int64_t>{}, "i64", Shape{4});
  visit(std::type_identity<std::uint8_t>{}, "u8", Shape{6});
  visit(std::type_identity<std::uint16_t>{}, "u16", Shape{2, 2});
  visit(std::type_identity<std::uint32_t>{}, "u32", Shape{3});
  visit(std::type_identity<bool>{}, "bool", Shape{2, 3});
}

/// The packed batch both directions hold: three clouds of 2, 5 and 3 xyz points whose packed
/// rows (10, 3) follow the formula.
const std::vector<index_t> cloud_sizes = {2, 5, 3};
constexpr index_t cloud_points = 10;

/// Why `tensor` (called `name`) is not formula_tensor<T>(shape), or nullopt when it is.
template <class T>
std::optional<std::string> mismatch_of(const std::string& name, const AnyTensor& tensor,
                                       const Shape& shape) {
  std::ostringstream why;
  if (tensor.dtype() != tbatch::dtype_of<T>) {
    why << "tensor '" << name << "' has dtype " << tensor.dtype() << ", expected "
        << tbatch::dtype_of<T>;
    return why.str();
  }
  if (!(tensor.shape() == shape)) {
    why << "tensor '" << name << "' has shape " << tensor.shape() << ", expected " << shape;
    return why.str();
  }
  const Tensor<T> dense = tensor.get<T>().contiguous();
  for (index_t i = 0; i < dense.numel(); ++i)
    if (dense.data()[i] != value<T>(i)) {
      // Printed as double so int8 and uint8 show as numbers, not characters.
      why << "tensor '" << name << "' holds " << static_cast<double>(dense.data()[i])
          << " at position " << i << ", expected " << static_cast<double>(value<T>(i));
      return why.str();
    }
  return std::nullopt;
}

/// Why `file`, as io_interop.py writes it, is not what it should be, or nullopt when it is.
std::optional<std::string> mismatch_in(const io::TensorFile& file) {
  std::set<std::string> expected_names = {"clouds", "clouds.shape_per_tensor", "clouds.first_idx"};
  std::optional<std::string> mismatch;
  for_each_formula_tensor(
      [&]<class T>(std::type_identity<T>, const char* name, const Shape& shape) {
        expected_names.insert(name);
        if (mismatch) return;
        const auto found = file.tensors.find(name);
        if (found == file.tensors.end())
          mismatch = std::string("tensor '") + name + "' is missing";
        else
          mismatch = mismatch_of<T>(name, found->second, shape);
      });
  if (mismatch) return mismatch;
  for (const auto& [name, tensor] : file.tensors)
    if (!expected_names.contains(name)) return "unexpected tensor '" + name + "'";

  const auto written_by = file.metadata.find("written_by");
  if (written_by == file.metadata.end() || written_by->second != "io_interop.py")
    return std::string("metadata entry 'written_by' is not 'io_interop.py'");

  const PackedBatch<float> clouds = io::get<PackedBatch<float>>(file, "clouds");
  if (clouds.batch_size() != index_t(cloud_sizes.size()))
    return "batch 'clouds' has " + std::to_string(clouds.batch_size()) + " elements, expected " +
           std::to_string(cloud_sizes.size());
  const Tensor<float> points = formula_tensor<float>(Shape{cloud_points, 3});
  for (index_t i = 0, first_row = 0; i < clouds.batch_size(); ++i) {
    const index_t rows = cloud_sizes[std::size_t(i)];
    if (!equal(clouds.element(i), points.narrow(0, first_row, rows)))
      return "element " + std::to_string(i) + " of batch 'clouds' differs";
    first_row += rows;
  }
  return std::nullopt;
}

void write(const std::string& path) {
  io::TensorFile file;
  for_each_formula_tensor(
      [&]<class T>(std::type_identity<T>, const char* name, const Shape& shape) {
        file.tensors.emplace(name, formula_tensor<T>(shape));
      });
  // A transposed view, so save must write a non-contiguous source in its row-major order: the
  // columns of `rows_as_columns` are the rows of the formula tensor.
  const Tensor<float> rows_as_columns = formula_tensor<float>(Shape{4, 3}).transpose(0, 1).clone();
  file.tensors.emplace("f32_transposed", rows_as_columns.transpose(0, 1));
  file.metadata.emplace("written_by", "tbatch");
  io::put(file, "clouds",
          tbatch::list_to_packed(formula_tensor<float>(Shape{cloud_points, 3}).split(cloud_sizes)));
  io::save(path, file);
}

int check(const std::string& path) {
  for (const io::Mmap mmap : {io::Mmap::yes, io::Mmap::no})
    if (const std::optional<std::string> mismatch = mismatch_in(io::load(path, mmap))) {
      std::cerr << path << (mmap == io::Mmap::yes ? " (mapped)" : " (copied)") << ": " << *mismatch
                << "\n";
      return 1;
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "write" && mode != "check") {
    std::cerr << "usage: io_interop write|check PATH\n";
    return 2;
  }
  try {
    if (mode == "write") {
      write(argv[2]);
      return 0;
    }
    return check(argv[2]);
  } catch (const std::exception& e) {
    std::cerr << argv[2] << ": " << e.what() << "\n";
    return 1;
  }
}
