// DLPack with libtorch (ctest compare.dlpack_torch): tensors and batches cross to at::fromDLPack
// and back through at::toDLPack, and both sides must see the same memory, strides included.
// Exits 1 on a mismatch. Bool, uint16 and uint32 are left out: libtorch 1.13 has no DLPack bool
// and no 16/32-bit unsigned tensors.

#include <ATen/DLConvertor.h>
#include <torch/torch.h>

#include <iostream>
#include <optional>
#include <string>

#include <tbatch/dlpack.hpp>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::cout << "FAIL " << what << '\n';
    ++failures;
  }
}

template <class T>
void round_trip(const char* name) {
  // A transposed view: non-unit strides must survive both crossings.
  const tbatch::Tensor<T> x = tbatch::Tensor<T>::arange(12).reshape({3, 4}).transpose(0, 1);
  const at::Tensor t = at::fromDLPack(tbatch::to_dlpack(x).release());
  check(t.data_ptr() == static_cast<const void*>(x.data()), std::string(name) + ": same memory");
  check(t.sizes() == at::IntArrayRef({4, 3}), std::string(name) + ": shape");
  check(t.strides() == at::IntArrayRef({1, 4}), std::string(name) + ": strides");
  // Written through torch, read through tbatch.
  t.select(0, 1).select(0, 2).fill_(7);
  check(static_cast<double>(x(1, 2)) == 7.0, std::string(name) + ": torch's write seen by tbatch");

  const tbatch::Tensor<T> back = tbatch::from_dlpack<T>(at::toDLPack(t.select(1, 1)));
  check(static_cast<const void*>(back.data()) == t.select(1, 1).data_ptr(),
        std::string(name) + ": back with the same memory");
  check(back == x.select(1, 1), std::string(name) + ": back with the same values");
}

}  // namespace

int main() {
  round_trip<float>("float32");
  round_trip<double>("float64");
  round_trip<Eigen::half>("float16");
  round_trip<Eigen::bfloat16>("bfloat16");
  round_trip<std::int8_t>("int8");
  round_trip<std::int16_t>("int16");
  round_trip<std::int32_t>("int32");
  round_trip<std::int64_t>("int64");
  round_trip<std::uint8_t>("uint8");

  // A flipped view: libtorch rejects negative strides (1.13 aborts the process), so it goes out
  // as a compact copy with DLPackStrides::non_negative.
  const tbatch::Tensor<float> flipped =
      tbatch::Tensor<float>::arange(6).slice(0, std::nullopt, std::nullopt, -1);
  const at::Tensor f =
      at::fromDLPack(tbatch::to_dlpack(flipped, tbatch::DLPackStrides::non_negative).release());
  check(f.stride(0) == 1 && f[0].item<float>() == 5.f && f[5].item<float>() == 0.f,
        "flipped view: crosses as a non-negative copy with the same values");

  // A padded batch: its data and shape_per_tensor as torch tensors over the same memory.
  const std::vector<tbatch::Tensor<float>> list{tbatch::Tensor<float>({3, 2}, 1.f),
                                                tbatch::Tensor<float>({1, 2}, 2.f)};
  const tbatch::PaddedBatch<float> padded = tbatch::list_to_padded(list, 0);
  tbatch::DLPackBatch exported = tbatch::to_dlpack(padded);
  const at::Tensor data = at::fromDLPack(exported.data.release());
  const at::Tensor shapes = at::fromDLPack(exported.shape_per_tensor.release());
  check(data.data_ptr() == padded.data().data(), "padded batch data: same memory");
  check(shapes.data_ptr<int64_t>()[0] == 3 && shapes.data_ptr<int64_t>()[1] == 1,
        "padded batch shape_per_tensor");

  std::cout << (failures == 0 ? "dlpack_torch: all round trips share memory\n"
                              : "dlpack_torch: FAILED\n");
  return failures == 0 ? 0 : 1;
}
