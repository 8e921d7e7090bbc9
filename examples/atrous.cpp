// atrous: a dilated ("atrous") 3x3 convolution done as space_to_batch_nd -> an ordinary 3x3
// convolution -> batch_to_space_nd, the way TensorFlow's atrous_conv2d does it.
//
// A 3x3 kernel with dilation r reads the pixels (y + r * dy, x + r * dx), dy, dx in {-1, 0, 1}.
// space_to_batch_nd with block (r, r) puts every r-th pixel of each image into its own smaller
// image, in which those taps are neighbours: a plain "valid" 3x3 convolution on the batch of
// sub-images, and batch_to_space_nd to interleave the results back, gives the dilated
// convolution ("same" size output, zero padding). The example checks that against a direct
// dilated convolution, for several rates and image sizes, and returns 1 on any mismatch.

#include <cstdio>
#include <random>
#include <vector>

#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen.hpp>  // Tensor::matrix() and flat(), Eigen maps

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

Tensor<float> random_tensor(std::mt19937& rng, Shape shape) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  Tensor<float> t(std::move(shape));
  for (float& v : t.flat())
    v = unit(rng);
  return t;
}

// Direct dilated convolution of NHWC images x with a (3, 3, C, K) kernel w, dilation `rate`,
// zero padding, output (N, H, W, K): the reference.
Tensor<float> dilated_conv_direct(const Tensor<float>& x, const Tensor<float>& w, index_t rate) {
  const index_t n = x.size(0), h = x.size(1), wd = x.size(2), c = x.size(3), k = w.size(3);
  Tensor<float> out(Shape{n, h, wd, k});
  for (index_t b = 0; b < n; ++b)
    for (index_t y = 0; y < h; ++y)
      for (index_t xx = 0; xx < wd; ++xx)
        for (index_t o = 0; o < k; ++o) {
          double sum = 0;
          for (index_t dy = 0; dy < 3; ++dy)
            for (index_t dx = 0; dx < 3; ++dx) {
              const index_t sy = y + rate * (dy - 1), sx = xx + rate * (dx - 1);
              if (sy < 0 || sy >= h || sx < 0 || sx >= wd) continue;
              for (index_t i = 0; i < c; ++i)
                sum += double(x(b, sy, sx, i)) * double(w(dy, dx, i, o));
            }
          out(b, y, xx, o) = float(sum);
        }
  return out;
}

// Ordinary ("valid", no padding) 3x3 convolution of NHWC images: (N, H - 2, W - 2, K). Each
// output pixel is one (9 * C) x K matrix product of its 3x3 window, read through Eigen maps.
Tensor<float> conv3x3_valid(const Tensor<float>& x, const Tensor<float>& w) {
  const index_t n = x.size(0), h = x.size(1) - 2, wd = x.size(2) - 2, c = x.size(3);
  const index_t k = w.size(3);
  Tensor<float> out(Shape{n, h, wd, k});
  const Tensor<float> kernel = w.reshape({3, 3 * c, k});  // per kernel row dy: (3 * C, K)
  for (index_t b = 0; b < n; ++b)
    for (index_t y = 0; y < h; ++y)
      for (index_t xx = 0; xx < wd; ++xx) {
        Eigen::RowVectorXf acc = Eigen::RowVectorXf::Zero(k);
        for (index_t dy = 0; dy < 3; ++dy) {
          // The 3 pixels (y + dy, xx .. xx + 2) of C channels are 3 * C contiguous floats.
          const Tensor<float> window =
              x.select(0, b).select(0, y + dy).narrow(0, xx, 3).reshape({1, 3 * c});
          acc += window.matrix() * kernel.select(0, dy).matrix();
        }
        Tensor<float> pixel = out.select(0, b).select(0, y).select(0, xx).unsqueeze(0);
        pixel.matrix() = acc;
      }
  return out;
}

// The dilated convolution through space_to_batch_nd. Pads each spatial dim by `rate` on both
// sides (the kernel's reach) plus what makes it divisible by the block, so every sub-image has
// a one-pixel border of real neighbours or zeros; the extra end padding is cropped off again.
Tensor<float> dilated_conv_s2b(const Tensor<float>& x, const Tensor<float>& w, index_t rate) {
  const index_t h = x.size(1), wd = x.size(2);
  const index_t extra_h = (rate - h % rate) % rate, extra_w = (rate - wd % rate) % rate;
  const std::vector<index_t> block{rate, rate};
  const Tensor<float> batched =
      tbatch::space_to_batch_nd(x, block, {{rate, rate + extra_h}, {rate, rate + extra_w}});
  const Tensor<float> convolved = conv3x3_valid(batched, w);
  return tbatch::batch_to_space_nd(convolved, block, {{0, extra_h}, {0, extra_w}});
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  bool ok = true;
  struct Case {
    index_t n, h, w, c, k, rate;
  };
  const Case cases[] = {
      {2, 13, 11, 3, 4, 2}, {1, 16, 16, 2, 3, 4}, {3, 9, 10, 1, 2, 3}, {2, 8, 7, 4, 2, 1}};
  std::printf("images (N, H, W, C)  kernel (3, 3, C, K)  rate  sub-images        max |diff|\n");
  for (const Case& cs : cases) {
    const Tensor<float> x = random_tensor(rng, Shape{cs.n, cs.h, cs.w, cs.c});
    const Tensor<float> w = random_tensor(rng, Shape{3, 3, cs.c, cs.k});
    const Tensor<float> expected = dilated_conv_direct(x, w, cs.rate);
    const Tensor<float> got = dilated_conv_s2b(x, w, cs.rate);

    float max_diff = 0.0f;
    const bool same_shape = got.shape() == expected.shape();
    if (same_shape) max_diff = (got.contiguous().flat() - expected.flat()).abs().maxCoeff();
    const bool pass = same_shape && tbatch::allclose(got, expected, 1e-4, 1e-5);
    ok = ok && pass;

    const Shape sub = tbatch::space_to_batch_nd_shape(
        x.shape(), {cs.rate, cs.rate},
        {{cs.rate, cs.rate + (cs.rate - cs.h % cs.rate) % cs.rate},
         {cs.rate, cs.rate + (cs.rate - cs.w % cs.rate) % cs.rate}});
    std::printf(
        "(%lld, %2lld, %2lld, %lld)       (3, 3, %lld, %lld)         %lld     "
        "(%2lld, %lld, %lld, %lld)    %.2e %s\n",
        (long long)cs.n, (long long)cs.h, (long long)cs.w, (long long)cs.c, (long long)cs.c,
        (long long)cs.k, (long long)cs.rate, (long long)sub[0], (long long)sub[1],
        (long long)sub[2], (long long)sub[3], max_diff, pass ? "ok" : "MISMATCH");
  }

  // The round trip the method relies on: batch_to_space_nd undoes space_to_batch_nd.
  const Tensor<float> x = random_tensor(rng, Shape{2, 10, 6, 3});
  const Tensor<float> back = tbatch::batch_to_space_nd(
      tbatch::space_to_batch_nd(x, {2, 3}, {{1, 1}, {0, 0}}), {2, 3}, {{1, 1}, {0, 0}});
  ok = ok && tbatch::equal(back, x);

  std::printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
