// Fuzz target: the safetensors loader (io::parse, the code behind io::load) on arbitrary bytes,
// seeded with valid files. A rejection must be a tbatch::Error; an accepted file must hold
// tensors whose bytes fit in the input, and reading a batch, a TensorDict or a RaggedTensorDict
// out of it must either work or be a tbatch::Error.

#include <tbatch/io/safetensors.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tbatch;
  using namespace tbatch::fuzz;
  io::TensorFile file;
  if (!accepts([&] { file = io::parse(data, size); })) return 0;
  index_t bytes = 0;
  for (const auto& [name, tensor] : file.tensors) {
    expect(!name.empty() && name != "__metadata__", "a tensor name the format reserves");
    expect(tensor.is_contiguous(), "a parsed tensor is contiguous");
    bytes += tensor.numel() * tensor.element_size();
  }
  expect(std::uint64_t(bytes) + 8 <= size, "the tensors' bytes fit in the input");
  accepts([&] { io::get<PackedBatch<float>>(file, "batch"); });
  accepts([&] { io::get<PaddedBatch<float>>(file, "batch"); });
  accepts([&] { io::get_tensordict(file); });
  accepts([&] { io::get_ragged_tensordict(file); });
  return 0;
}
