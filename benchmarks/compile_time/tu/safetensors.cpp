// A file that saves one tensor to a safetensors file and loads it back (tbatch::tbatch_io).
#include <tbatch/io/safetensors.hpp>

int main() {
  tbatch::io::TensorFile file;
  file.tensors.emplace("x", tbatch::AnyTensor(tbatch::Tensor<float>(tbatch::Shape{2, 3}, 1.f)));
  tbatch::io::save("x.safetensors", file);
  return static_cast<int>(tbatch::io::load("x.safetensors").tensors.size());
}
