// cache_dataset: a dataset of ragged point clouds cached in one safetensors file.
//
// Preprocessing a dataset once and reloading it on every run is what a cache file is for. This
// example makes 100 random point clouds of 50 to 500 xyz points each, packs them into one
// (total points, 3) tensor with list_to_packed, and stores the batch together with a TensorDict
// of per-cloud labels (a class id and the scale the cloud was drawn with) in a safetensors file,
// which Python's safetensors and numpy can read too. It then maps the file back (Mmap::yes: the
// tensors view the file's pages, nothing is copied up front), checks every cloud and label
// against the originals and prints a summary. Usage: cache_dataset [PATH] (default
// cache_dataset.safetensors in the current directory). Returns 1 on any mismatch.

#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <tbatch/io/safetensors.hpp>
#include <tbatch/tbatch.hpp>

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::Shape;
using tbatch::Tensor;
using tbatch::TensorDict;
namespace io = tbatch::io;

int main(int argc, char** argv) {
  const std::filesystem::path path = argc > 1 ? argv[1] : "cache_dataset.safetensors";
  constexpr index_t cloud_count = 100, class_count = 5;

  // Each cloud: a Gaussian blob of a random size and scale, labelled with a random class.
  std::mt19937 rng(7);
  std::uniform_int_distribution<index_t> point_count(50, 500), class_id(0, class_count - 1);
  std::uniform_real_distribution<float> scale_of(0.5f, 2.0f);
  std::vector<Tensor<float>> clouds;
  Tensor<index_t> labels(Shape{cloud_count});
  Tensor<float> scales(Shape{cloud_count});
  for (index_t i = 0; i < cloud_count; ++i) {
    labels(i) = class_id(rng);
    scales(i) = scale_of(rng);
    std::normal_distribution<float> coordinate(0.0f, scales(i));
    Tensor<float> points(Shape{point_count(rng), 3});
    for (index_t p = 0; p < points.size(0); ++p)
      for (index_t d = 0; d < 3; ++d)
        points(p, d) = coordinate(rng);
    clouds.push_back(points);
  }
  const PackedBatch<float> batch = tbatch::list_to_packed(clouds);
  const TensorDict targets({{"label", labels}, {"scale", scales}}, {cloud_count}, {"cloud"});

  // One file: the batch under "clouds" (its data, shape_per_tensor and first_idx tensors), the
  // TensorDict's entries under their keys, and how to rebuild both in the metadata.
  io::TensorFile file;
  io::put(file, "clouds", batch);
  io::put(file, targets);
  file.metadata["description"] = "random point clouds, 50 to 500 points each";
  io::save(path, file);

  // The reloaded batch and labels view the mapped file; they keep the mapping alive.
  const io::TensorFile cached = io::load(path, io::Mmap::yes);
  const PackedBatch<float> reloaded = io::get<PackedBatch<float>>(cached, "clouds");
  const TensorDict reloaded_targets = io::get_tensordict(cached);
  bool ok = reloaded.batch_size() == cloud_count;
  for (index_t i = 0; ok && i < cloud_count; ++i)
    ok = tbatch::equal(reloaded.element(i), clouds[std::size_t(i)]);
  ok = ok && (reloaded_targets == targets).all() && reloaded_targets.names() == targets.names();

  std::cout << "cached " << cloud_count << " point clouds (" << batch.data().size(0)
            << " points) and their labels in " << path.string() << " ("
            << std::filesystem::file_size(path) << " bytes)\n"
            << "mapped reload " << (ok ? "matches" : "DIFFERS from")
            << " the original: " << reloaded.batch_size() << " clouds, data "
            << reloaded.data().shape() << ", keys";
  for (const auto& key : reloaded_targets.keys())
    std::cout << ' ' << key;
  std::cout << "\n" << (ok ? "all checks passed\n" : "CHECK FAILED\n");
  return ok ? 0 : 1;
}
