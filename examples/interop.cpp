// interop: a sensor buffer the application owns is batched without copying it, and the batch
// is handed to the next library through DLPack.
//
// The application receives frames of lidar points in one buffer it allocated: the points of
// every frame back to back (x, y, z, intensity). tbatch borrows that buffer as the data of a
// packed batch (no copy), pads the frames for a model that wants (B, max_points, 4) (one copy,
// the conversion itself, reading the frames in place), and exports both batches as DLPack
// tensors, which is what libtorch's at::fromDLPack, ONNX Runtime or NumPy take. The "consumer"
// below reads the DLPack tensors the way such a library does. Every step compares pointers:
// the program returns 1 if any byte was copied where none should be.

#include <initializer_list>
#include <iostream>
#include <memory>
#include <numeric>
#include <vector>

#include <tbatch/dlpack.hpp>

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::cout << (ok ? "  ok    " : "  FAIL  ") << what << '\n';
  if (!ok) ++failures;
}

// What a DLPack consumer sees: the float at a multi-index (one entry per dim).
float consumer_read(const DLManagedTensor* managed, std::initializer_list<std::int64_t> index) {
  const DLTensor& t = managed->dl_tensor;
  const auto* origin = static_cast<const float*>(t.data) + t.byte_offset / sizeof(float);
  std::int64_t offset = 0;
  int d = 0;
  for (const std::int64_t i : index)
    offset += i * t.strides[d++];
  return origin[offset];
}

}  // namespace

int main() {
  // The application's buffer: 4 frames of 5, 2, 7 and 3 points, 4 floats each, owned by a
  // shared_ptr so that tbatch can keep it alive as long as a batch uses it.
  const std::vector<index_t> points_per_frame{5, 2, 7, 3};
  const index_t total =
      std::accumulate(points_per_frame.begin(), points_per_frame.end(), index_t(0));
  auto sensor = std::make_shared<std::vector<float>>(static_cast<std::size_t>(total * 4));
  std::iota(sensor->begin(), sensor->end(), 0.f);
  const float* sensor_data = sensor->data();

  // 1. The buffer as a packed batch: a borrowed tensor plus kaolin's metadata. No copy.
  const Tensor<float> points =
      Tensor<float>::borrow(sensor->data(), Shape{total, 4}, std::shared_ptr<const void>(sensor));
  Tensor<index_t> shape_per_tensor(Shape{index_t(points_per_frame.size()), 1});
  for (std::size_t i = 0; i < points_per_frame.size(); ++i)
    shape_per_tensor(index_t(i), 0) = points_per_frame[i];
  const Tensor<index_t> first_idx = tbatch::get_first_idx(shape_per_tensor.reshape({-1}));
  const tbatch::PackedBatch<float> packed(points, shape_per_tensor, first_idx);
  std::cout << "packed batch over the sensor buffer: " << packed.batch_size() << " frames, "
            << total << " points\n";
  check(packed.data().data() == sensor_data, "the packed batch's data is the sensor buffer");
  check(packed.element(2).data() == sensor_data + 7 * 4, "frame 2 is a view into it");

  // 2. Padded for the model: the frames are read in place (views of the borrowed buffer), and
  // the only copy is the padded output itself.
  const tbatch::PaddedBatch<float> padded = tbatch::list_to_padded(packed.to_list(), 0);
  std::cout << "padded batch: shape " << padded.data().shape() << '\n';
  bool frames_in_place = true;
  for (index_t i = 0; i < packed.batch_size(); ++i)
    frames_in_place = frames_in_place && packed.element(i).data() == sensor_data + first_idx(i) * 4;
  check(frames_in_place, "the frames list_to_padded read are views of the sensor buffer");

  // 3. Handed on through DLPack: the consumer sees the same memory.
  // to_dlpack returns an owner (a DLPackPtr): an export nobody takes is freed, not leaked.
  tbatch::DLPackPtr packed_out = tbatch::to_dlpack(packed.data());
  tbatch::DLPackBatch padded_out = tbatch::to_dlpack(padded);
  check(packed_out->dl_tensor.data == sensor_data,
        "DLPack export of the packed data: same pointer");
  check(padded_out.data->dl_tensor.data == padded.data().data(),
        "DLPack export of the padded data: same pointer");
  check(consumer_read(packed_out.get(), {7, 2}) == (*sensor)[7 * 4 + 2],
        "the consumer reads the sensor values through DLPack");
  check(consumer_read(padded_out.data.get(), {1, 1, 3}) == (*sensor)[(5 + 1) * 4 + 3],
        "and the padded values (frame 1, point 1, intensity)");

  // A C consumer takes the raw pointer (release()). The application may drop its own
  // reference: the export keeps the buffer alive until the consumer calls the deleter, once.
  DLManagedTensor* consumed = packed_out.release();
  sensor.reset();
  check(consumer_read(consumed, {0, 1}) == 1.f, "the buffer outlives the application's handle");
  consumed->deleter(consumed);

  // 4. And back: a DLPack tensor from another library becomes a tbatch batch without a copy.
  const auto round_trip = tbatch::from_dlpack<tbatch::PaddedBatch<float>>(std::move(padded_out));
  check(round_trip.data().data() == padded.data().data(), "from_dlpack: same pointer again");

  std::cout << (failures == 0 ? "interop: no byte copied where none should be\n"
                              : "interop: FAILED\n");
  return failures == 0 ? 0 : 1;
}
