#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace tbatch;

namespace {

template <class Printable>
std::string text_of(const Printable& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

}  // namespace

// ===================================================================== number formats

TEST_CASE("whole floats print with a trailing point", "[print]") {
  CHECK(text_of(Tensor<float>({2, 2}, {1, 2, 3, 4})) ==
        "tensor([[1., 2.],\n"
        "        [3., 4.]], shape=[2, 2], dtype=float32)");
  CHECK(text_of(Tensor<double>({3}, {-3, 10, 0})) ==
        "tensor([-3., 10.,  0.], shape=[3], dtype=float64)");
  CHECK(text_of(Tensor<float>({2}, {-0.0f, 0.0f})) ==
        "tensor([-0.,  0.], shape=[2], dtype=float32)");
}

TEST_CASE("other floats print with 4 decimals, aligned", "[print]") {
  CHECK(text_of(Tensor<float>({2, 3}, {1, 2.5f, -3, 4, 5, 1.0f / 3})) ==
        "tensor([[ 1.0000,  2.5000, -3.0000],\n"
        "        [ 4.0000,  5.0000,  0.3333]], shape=[2, 3], dtype=float32)");
  CHECK(text_of(Tensor<double>({2}, {0, 0.5})) ==
        "tensor([0.0000, 0.5000], shape=[2], dtype=float64)");
  CHECK(text_of(Tensor<double>({2}, {999.5, 1.25})) ==
        "tensor([999.5000,   1.2500], shape=[2], dtype=float64)");
}

TEST_CASE("floats print in scientific notation when their range needs it", "[print]") {
  // Largest above 1e8.
  CHECK(text_of(Tensor<double>({3}, {123456789.0, 1.5, -0.001})) ==
        "tensor([ 1.2346e+08,  1.5000e+00, -1.0000e-03], shape=[3], dtype=float64)");
  // Smallest below 1e-4.
  CHECK(text_of(Tensor<double>({2}, {1e-5, 0.5})) ==
        "tensor([1.0000e-05, 5.0000e-01], shape=[2], dtype=float64)");
  // Whole numbers spanning more than 1000x.
  CHECK(text_of(Tensor<float>({3}, {1, 2000, 0})) ==
        "tensor([1.0000e+00, 2.0000e+03, 0.0000e+00], shape=[3], dtype=float32)");
  // Exactly 1000x is still fixed.
  CHECK(text_of(Tensor<float>({2}, {1, 1000})) ==
        "tensor([   1., 1000.], shape=[2], dtype=float32)");
}

TEST_CASE("nan and infinities print as nan, inf and -inf and take no part in the format",
          "[print]") {
  CHECK(text_of(Tensor<double>({4}, {1, not_a_number, -infinity, infinity})) ==
        "tensor([  1.,  nan, -inf,  inf], shape=[4], dtype=float64)");
  CHECK(text_of(Tensor<double>({3}, {-not_a_number, 0.25, infinity})) ==
        "tensor([   nan, 0.2500,    inf], shape=[3], dtype=float64)");
  CHECK(text_of(Tensor<float>({2}, {std::numeric_limits<float>::quiet_NaN(), 0})) ==
        "tensor([nan,  0.], shape=[2], dtype=float32)");
}

TEST_CASE("half and bfloat16 print as floats", "[print]") {
  CHECK(text_of(Tensor<Eigen::half>({2}, {Eigen::half(0.5f), Eigen::half(2.0f)})) ==
        "tensor([0.5000, 2.0000], shape=[2], dtype=float16)");
  CHECK(text_of(Tensor<Eigen::bfloat16>({2}, {Eigen::bfloat16(-4.0f), Eigen::bfloat16(256.0f)})) ==
        "tensor([ -4., 256.], shape=[2], dtype=bfloat16)");
}

TEST_CASE("integers print as integers, right-aligned", "[print]") {
  CHECK(text_of(Tensor<std::int32_t>({2, 2}, {1, -20, 3, 400})) ==
        "tensor([[  1, -20],\n"
        "        [  3, 400]], shape=[2, 2], dtype=int32)");
  CHECK(text_of(Tensor<std::uint8_t>({2}, {0, 255})) ==
        "tensor([  0, 255], shape=[2], dtype=uint8)");
  CHECK(text_of(Tensor<std::int8_t>({2}, {-128, 7})) ==
        "tensor([-128,    7], shape=[2], dtype=int8)");
  CHECK(text_of(Tensor<std::int64_t>(Shape{1}, std::numeric_limits<std::int64_t>::min())) ==
        "tensor([-9223372036854775808], shape=[1], dtype=int64)");
  CHECK(text_of(Tensor<std::uint32_t>({2}, {std::numeric_limits<std::uint32_t>::max(), 1})) ==
        "tensor([4294967295,          1], shape=[2], dtype=uint32)");
}

TEST_CASE("bools print as true and false, right-aligned", "[print]") {
  CHECK(text_of(Tensor<bool>({2, 2}, std::vector<bool>{true, false, false, true})) ==
        "tensor([[ true, false],\n"
        "        [false,  true]], shape=[2, 2], dtype=bool)");
}

// ===================================================================== shapes

TEST_CASE("0-d and empty tensors", "[print]") {
  CHECK(text_of(Tensor<float>(Shape{}, 2.5f)) == "tensor(2.5000, shape=[], dtype=float32)");
  CHECK(text_of(Tensor<std::int16_t>(Shape{}, -7)) == "tensor(-7, shape=[], dtype=int16)");
  CHECK(text_of(Tensor<float>(Shape{0})) == "tensor([], shape=[0], dtype=float32)");
  CHECK(text_of(Tensor<float>(Shape{2, 0})) ==
        "tensor([[],\n"
        "        []], shape=[2, 0], dtype=float32)");
}

TEST_CASE("rank 3: a blank line between matrices", "[print]") {
  CHECK(text_of(Tensor<std::int64_t>::arange(12).reshape({2, 2, 3})) ==
        "tensor([[[ 0,  1,  2],\n"
        "         [ 3,  4,  5]],\n"
        "\n"
        "        [[ 6,  7,  8],\n"
        "         [ 9, 10, 11]]], shape=[2, 2, 3], dtype=int64)");
}

TEST_CASE("views print their own elements", "[print]") {
  const Tensor<float> t = Tensor<float>::arange(6).reshape({2, 3});
  CHECK(text_of(t.transpose(0, 1)) ==
        "tensor([[0., 3.],\n"
        "        [1., 4.],\n"
        "        [2., 5.]], shape=[3, 2], dtype=float32)");
  CHECK(text_of(t.select(1, 2)) == "tensor([2., 5.], shape=[2], dtype=float32)");
}

TEST_CASE("more than 1000 elements are elided, the format chosen from those shown", "[print]") {
  CHECK(text_of(Tensor<double>::arange(5000)) ==
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00, ..., 4.9970e+03, 4.9980e+03, 4.9990e+03], "
        "shape=[5000], dtype=float64)");
  Tensor<float> big(Shape{100, 20});
  for (index_t i = 0; i < big.numel(); ++i)
    big.data()[i] = static_cast<float>(100 + i);
  big.at({50, 10}) = 1e9f;  // not shown, so not in the format
  CHECK(text_of(big) ==
        "tensor([[ 100.,  101.,  102., ...,  117.,  118.,  119.],\n"
        "        [ 120.,  121.,  122., ...,  137.,  138.,  139.],\n"
        "        [ 140.,  141.,  142., ...,  157.,  158.,  159.],\n"
        "        ...,\n"
        "        [2040., 2041., 2042., ..., 2057., 2058., 2059.],\n"
        "        [2060., 2061., 2062., ..., 2077., 2078., 2079.],\n"
        "        [2080., 2081., 2082., ..., 2097., 2098., 2099.]], shape=[100, 20], "
        "dtype=float32)");
  // Exactly 1000 elements print whole.
  const std::string thousand = text_of(Tensor<std::int32_t>::arange(1000));
  CHECK(thousand.find("...") == std::string::npos);
  CHECK(thousand.find(" 500, ") != std::string::npos);
}

TEST_CASE("the stream's precision, flags and width play no part and stay", "[print]") {
  std::ostringstream out;
  out.precision(2);
  out << std::hex << std::showpos << std::scientific << std::uppercase;
  const std::ios_base::fmtflags flags = out.flags();
  out << std::setw(40) << Tensor<double>({2}, {0.5, 12}) << '|'
      << Tensor<std::int32_t>({2}, {10, -1});
  CHECK(out.str() ==
        "tensor([ 0.5000, 12.0000], shape=[2], dtype=float64)|"
        "tensor([10, -1], shape=[2], dtype=int32)");
  CHECK(out.precision() == 2);
  CHECK(out.flags() == flags);
  CHECK(out.width() == 0);
}

// ===================================================================== batches and dicts

TEST_CASE("printing an ExactBatch", "[print][batch]") {
  const ExactBatch<std::int32_t> batch(Tensor<std::int32_t>::arange(6).reshape({2, 3, 1}));
  CHECK(text_of(batch) ==
        "ExactBatch(batch_size=2, data_shape=[2, 3, 1], dtype=int32,\n"
        "  data=[[[0],\n"
        "         [1],\n"
        "         [2]],\n"
        "\n"
        "        [[3],\n"
        "         [4],\n"
        "         [5]]])");
}

TEST_CASE("printing a PaddedBatch and a PackedBatch", "[print][batch]") {
  const std::vector<Tensor<float>> list{Tensor<float>({2, 2}, {1, 2, 3, 4}),
                                        Tensor<float>({1, 2}, {5, 0.5f})};
  CHECK(text_of(list_to_padded(list, -1.0f)) ==
        "PaddedBatch(batch_size=2, data_shape=[2, 2, 2], dtype=float32,\n"
        "  shape_per_tensor=[[2],\n"
        "                    [1]],\n"
        "  data=[[[ 1.0000,  2.0000],\n"
        "         [ 3.0000,  4.0000]],\n"
        "\n"
        "        [[ 5.0000,  0.5000],\n"
        "         [-1.0000, -1.0000]]])");
  CHECK(text_of(list_to_packed(list)) ==
        "PackedBatch(batch_size=2, data_shape=[3, 2], dtype=float32,\n"
        "  shape_per_tensor=[[2],\n"
        "                    [1]],\n"
        "  first_idx=[0, 2, 3],\n"
        "  data=[[1.0000, 2.0000],\n"
        "        [3.0000, 4.0000],\n"
        "        [5.0000, 0.5000]])");
}

TEST_CASE("printing a RaggedTensorDict", "[print][ragged]") {
  const TensorDict a({{"label", Tensor<std::int64_t>({2}, {3, 4})},
                      {"points", Tensor<float>({2, 2}, {1, 2, 3, 4})},
                      {"n", TensorDict({{"w", Tensor<bool>({2}, true)}}, {2})}},
                     {2});
  const TensorDict b({{"label", Tensor<std::int64_t>(Shape{1}, 7)},
                      {"points", Tensor<float>({1, 2}, {5, 6})},
                      {"n", TensorDict({{"w", Tensor<bool>({1}, false)}}, {1})}},
                     {1});
  CHECK(text_of(TensorDict::stack_ragged({a, b})) ==
        "RaggedTensorDict(batch_size=[2, -1], layout=padded,\n"
        "  label: int64, ragged, element_shapes=[[2], [1]], data_shape=[2, 2, 1],\n"
        "    data=[[[3],\n"
        "           [4]],\n"
        "\n"
        "          [[7],\n"
        "           [0]]],\n"
        "  points: float32, ragged, element_shapes=[[2, 2], [1, 2]], data_shape=[2, 2, 2],\n"
        "    data=[[[1., 2.],\n"
        "           [3., 4.]],\n"
        "\n"
        "          [[5., 6.],\n"
        "           [0., 0.]]],\n"
        "  n: RaggedTensorDict(batch_size=[2, -1], layout=padded,\n"
        "    w: bool, ragged, element_shapes=[[2], [1]], data_shape=[2, 2, 1],\n"
        "      data=[[[ true],\n"
        "             [ true]],\n"
        "\n"
        "            [[false],\n"
        "             [false]]]))");
  const TensorDict c({{"x", Tensor<double>({3}, {0.25, 1, 2})}}, {});
  CHECK(text_of(TensorDict::stack_ragged({c, c}, RaggedLayout::packed)) ==
        "RaggedTensorDict(batch_size=[2], layout=packed,\n"
        "  x: float64, shape=[2, 3],\n"
        "    data=[[0.2500, 1.0000, 2.0000],\n"
        "          [0.2500, 1.0000, 2.0000]])");
  const TensorDict d({{"x", Tensor<double>({2}, {8, 9})}}, {});
  CHECK(text_of(TensorDict::stack_ragged({c, d}, RaggedLayout::packed)) ==
        "RaggedTensorDict(batch_size=[2], layout=packed,\n"
        "  x: float64, ragged, element_shapes=[[3], [2]], data_shape=[5, 1],\n"
        "    data=[[0.2500],\n"
        "          [1.0000],\n"
        "          [2.0000],\n"
        "          [8.0000],\n"
        "          [9.0000]])");
  CHECK(text_of(TensorDict::stack_ragged({TensorDict(Shape{2}), TensorDict(Shape{2})})) ==
        "RaggedTensorDict(batch_size=[2, 2], layout=padded)");
}

TEST_CASE("a RaggedTensorDict of many entries elides their shapes", "[print][ragged]") {
  std::vector<TensorDict> tds;
  for (int i = 0; i < 600; ++i)
    tds.push_back(TensorDict({{"x", Tensor<float>(Shape{i % 3 + 1, 1})}}, {}));
  const std::string text = text_of(TensorDict::stack_ragged(tds, RaggedLayout::packed));
  CHECK(text.find("element_shapes=[[1, 1], [2, 1], [3, 1], ..., [1, 1], [2, 1], [3, 1]], "
                  "data_shape=[1200, 1],") != std::string::npos);
}

TEST_CASE("an AnyTensor prints as its Tensor", "[print]") {
  const Tensor<std::uint16_t> t({3}, {1, 20, 300});
  CHECK(text_of(AnyTensor(t)) == text_of(t));
  CHECK(text_of(AnyTensor(t)) == "tensor([  1,  20, 300], shape=[3], dtype=uint16)");
}
