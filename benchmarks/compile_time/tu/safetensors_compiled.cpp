// The same in a program that links tbatch::io_compiled, whose CMake target defines
// TBATCH_COMPILED: the io headers declare, the library defines.
#define TBATCH_COMPILED
#include <tbatch/io/safetensors.hpp>

int main() {
  tbatch::io::TensorFile file;
  file.tensors.emplace("x", tbatch::AnyTensor(tbatch::Tensor<float>(tbatch::Shape{2, 3}, 1.f)));
  tbatch::io::save("x.safetensors", file);
  return static_cast<int>(tbatch::io::load("x.safetensors").tensors.size());
}
