// compose: one user function over the Batch concept, serving every layout that supports it.
//
// `tiles` reflect-pads every image of a batch by one pixel (inside the image's own borders) and
// then splits each padded image into its 2x2 phases with space_to_batch_nd, which is what a
// stride-2 or dilated convolution wants as input. It is written once, as a template constrained
// on tbatch::Batch plus "space_to_batch_nd accepts this layout", and works unchanged for an
// ExactBatch (images of one size) and a PaddedBatch (images of different sizes). A PackedBatch
// does not satisfy the constraint (its space_to_batch_nd is deleted: packed elements have no
// common extent to split into blocks), which the static_asserts below show; the caller
// converts it with to_padded and back with to_packed, choosing the extent explicitly.
//
// Every result is checked against slicing each padded image with step 2 (phase (ky, kx) of an
// image P is P[ky::2, kx::2]). Returns 1 on any mismatch.

#include <array>
#include <cstdio>
#include <iostream>
#include <vector>

#include <tbatch/tbatch.hpp>

using tbatch::ExactBatch;
using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::PaddedBatch;
using tbatch::PadMode;
using tbatch::Shape;
using tbatch::Tensor;

/// A batch layout that space_to_batch_nd takes and returns unchanged.
template <class B>
concept BlockableBatch = tbatch::Batch<B> &&
    requires(const B& batch, const std::vector<index_t>& block,
             const std::vector<std::array<index_t, 2>>& p) {
  { tbatch::space_to_batch_nd(batch, block, p) } -> std::same_as<B>;
};

static_assert(BlockableBatch<ExactBatch<float>>);
static_assert(BlockableBatch<PaddedBatch<float>>);
static_assert(!BlockableBatch<PackedBatch<float>>);  // deleted overload: convert explicitly
static_assert(tbatch::Batch<PackedBatch<float>>);    // ... though pad takes every layout

/// Every (H, W, C) image of `images` reflect-padded by 1 pixel, then split into its 2x2 phases:
/// element k * B + b of the result is phase k = (ky, kx) of padded image b. The spatial dims
/// get end padding (zeros) up to an even size, as space_to_batch_nd needs.
template <BlockableBatch B>
B tiles(const B& images) {
  const B padded = tbatch::pad(images, {0, 0, 1, 1, 1, 1}, PadMode::reflect);
  const Shape& data = padded.data().shape();  // (B, H, W, C): the common (or maximum) extent
  return tbatch::space_to_batch_nd(padded, {2, 2}, {{0, data[1] % 2}, {0, data[2] % 2}});
}

namespace {

Tensor<float> image(index_t h, index_t w, index_t c, float base) {
  Tensor<float> t(Shape{h, w, c});
  for (index_t y = 0; y < h; ++y)
    for (index_t x = 0; x < w; ++x)
      for (index_t i = 0; i < c; ++i)
        t(y, x, i) = base + float(100 * y + 10 * x + i);
  return t;
}

// Checks tiles(batch) against slicing each reflect-padded image with step 2.
template <tbatch::Batch B>
bool check_tiles(const B& input, const B& out, const char* name) {
  const index_t n = input.batch_size();
  bool ok = out.batch_size() == 4 * n;
  for (index_t b = 0; b < n; ++b) {
    const Tensor<float> padded =
        tbatch::pad(input.element(b), {0, 0, 1, 1, 1, 1}, PadMode::reflect);
    for (index_t ky = 0; ky < 2; ++ky)
      for (index_t kx = 0; kx < 2; ++kx) {
        const Tensor<float> phase = padded.slice(0, ky, {}, 2).slice(1, kx, {}, 2);
        const Tensor<float> got = out.element((2 * ky + kx) * n + b);
        // An exact batch's phases are all the same size: its extra end padding is zeros.
        const Tensor<float> valid = got.narrow(0, 0, phase.size(0)).narrow(1, 0, phase.size(1));
        ok = ok && tbatch::equal(valid, phase);
      }
  }
  std::cout << name << ": " << n << " images " << input.data().shape() << " -> " << out.batch_size()
            << " phases " << out.data().shape() << (ok ? "" : "  MISMATCH") << "\n";
  return ok;
}

}  // namespace

int main() {
  bool ok = true;

  // Images of one size: an ExactBatch (3, 5, 6, 2) -> padded (3, 7, 8, 2) -> (12, 4, 4, 2).
  std::vector<Tensor<float>> same;
  for (int i = 0; i < 3; ++i)
    same.push_back(image(5, 6, 2, 1000.0f * float(i)));
  const ExactBatch<float> exact = tbatch::to_exact(tbatch::list_to_padded(same, 0.0f));
  ok = check_tiles(exact, tiles(exact), "ExactBatch ") && ok;

  // Images of different sizes: a PaddedBatch. Each phase keeps the extent of its own image's
  // valid data (shape_per_tensor), so the zero padding up to the maximum is never data.
  const std::vector<Tensor<float>> mixed = {image(4, 7, 2, 0), image(6, 3, 2, 1000),
                                            image(3, 3, 2, 2000)};
  const PaddedBatch<float> padded = tbatch::list_to_padded(mixed, -1.0f);
  const PaddedBatch<float> padded_tiles = tiles(padded);
  ok = check_tiles(padded, padded_tiles, "PaddedBatch") && ok;
  // Phase (0, 0) of image 0, padded to 6 x 9: ceil(6 / 2) x ceil(9 / 2) = 3 x 5 pixels.
  ok = ok && padded_tiles.shape_of(0) == Shape{3, 5, 2};

  // A PackedBatch: convert to padded, tile, and pack the phases again (only their valid data).
  const PackedBatch<float> packed = tbatch::list_to_packed(mixed);
  const PackedBatch<float> packed_tiles = tbatch::to_packed(tiles(tbatch::to_padded(packed, 0.0f)));
  ok = ok && tbatch::equal(packed_tiles.data(), tbatch::to_packed(padded_tiles).data()) &&
       tbatch::equal(packed_tiles.shape_per_tensor(), padded_tiles.shape_per_tensor());
  ok = check_tiles(packed, packed_tiles, "PackedBatch") && ok;

  std::printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
