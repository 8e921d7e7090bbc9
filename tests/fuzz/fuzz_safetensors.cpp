// Fuzz target: the safetensors loader (io::parse, the code behind io::load) on arbitrary bytes,
// seeded with valid files and hostile ones (deep nesting, huge ranks, padding, bad bools,
// contradictory RaggedTensorDict structures); tests/fuzz/safetensors.dict holds the format's
// tokens. A rejection must be a tbatch::Error; an accepted file must hold tensors whose bytes
// fit in the input and whose BOOL bytes are 0 or 1, and reading a batch, a TensorDict or a
// RaggedTensorDict out of it must either work or be a tbatch::Error. A RaggedTensorDict that
// loads must give every element and print: the loader checks what they rely on.

#include <sstream>
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
    expect(tensor.dim() <= 64, "a parsed tensor has at most 64 dims");
    bytes += tensor.numel() * tensor.element_size();
    if (tensor.dtype() == DType::boolean) {
      const auto* b = static_cast<const unsigned char*>(tensor.data_ptr());
      for (index_t i = 0; i < tensor.numel(); ++i)
        expect(b[i] <= 1, "a BOOL byte read from a file is 0 or 1");
    }
  }
  expect(std::uint64_t(bytes) + 8 <= size, "the tensors' bytes fit in the input");
  accepts([&] { io::get<PackedBatch<float>>(file, "batch"); });
  accepts([&] { io::get<PaddedBatch<float>>(file, "batch"); });
  accepts([&] { io::get_tensordict(file); });
  std::optional<RaggedTensorDict> ragged;
  if (accepts([&] { ragged = io::get_ragged_tensordict(file); })) {
    for (index_t i = 0; i < ragged->size(); ++i)
      expect(accepts([&] { ragged->element(i); }), "an accepted RaggedTensorDict gives element(i)");
    std::ostringstream text;
    expect(accepts([&] { text << *ragged; }), "an accepted RaggedTensorDict prints");
  }
  return 0;
}
