// dataset: robot trajectories in a TensorDict, cut into shuffled minibatches and put back.
//
// The TensorDict of the reference (TensorDict's "batch size" page): 4 robots x 6 time steps,
// each step with 4 joint angles and a battery level, plus the step number and a nested
// "target" TensorDict holding the next step's joints. Every operation below acts on the two
// batch dims of all entries at once: indexing a robot or the first steps, selecting the steps
// with a low battery by a mask, flattening robots and steps into one dim of 24 samples,
// shuffling them with an index tensor, splitting them into minibatches of 8 and stacking the
// minibatches again. Each step is checked against values computed from the formulas that
// filled the entries; returns 1 on any mismatch.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>
#include <vector>

#include <tbatch/tbatch.hpp>

using tbatch::Ellipsis;
using tbatch::index_t;
using tbatch::Shape;
using tbatch::Slice;
using tbatch::Tensor;
using tbatch::TensorDict;

namespace {

constexpr index_t robots = 4, steps = 6, joints = 4;

float joint_angle(index_t robot, index_t step, index_t joint) {
  return float(robot) + 0.1f * float(step) + 0.01f * float(joint);
}
float battery_level(index_t robot, index_t step) {
  return 1.0f - 0.125f * float(step) - 0.0625f * float(robot);
}

// Checks that sample `k` of a TensorDict flattened to one batch dim holds robot r's step t.
bool holds_sample(const TensorDict& td, index_t k, index_t r, index_t t) {
  const Tensor<float> j = td.get<float>("joints"), b = td.get<float>("battery");
  const Tensor<index_t> s = td.get<index_t>("step");
  const Tensor<float> next = td.get<float>({"target", "joints"});
  bool ok = b(k) == battery_level(r, t) && s(k) == t;
  for (index_t q = 0; q < joints; ++q)
    ok = ok && j(k, q) == joint_angle(r, t, q) &&
         next(k, q) == joint_angle(r, std::min(t + 1, steps - 1), q);
  return ok;
}

}  // namespace

int main() {
  Tensor<float> joint_values(Shape{robots, steps, joints}),
      next_joints(Shape{robots, steps, joints});
  Tensor<float> battery(Shape{robots, steps});
  Tensor<index_t> step(Shape{robots, steps});
  for (index_t r = 0; r < robots; ++r)
    for (index_t t = 0; t < steps; ++t) {
      battery(r, t) = battery_level(r, t);
      step(r, t) = t;
      for (index_t q = 0; q < joints; ++q) {
        joint_values(r, t, q) = joint_angle(r, t, q);
        next_joints(r, t, q) = joint_angle(r, std::min(t + 1, steps - 1), q);
      }
    }

  // batch_size [4, 6]: every entry starts with it; the feature dims after it may differ.
  TensorDict td({{"joints", joint_values}, {"battery", battery}, {"step", step}}, {robots, steps},
                {"robot", "time"});
  td.set("target", {{"joints", next_joints}});  // a nested TensorDict with the parent's batch size
  std::cout << "trajectories: batch_size " << td.batch_size() << ", batch_dims " << td.batch_dims()
            << ", numel " << td.numel() << ", keys";
  for (const auto& key : td.keys())
    std::cout << ' ' << key;
  std::cout << "\n";
  bool ok = td.batch_size() == Shape{robots, steps} && td.numel() == robots * steps &&
            td.get_dict("target").batch_size() == td.batch_size();

  // A value whose leading dims are not the batch size is rejected, naming the key.
  try {
    td.set("contact", Tensor<float>(Shape{3}));
    ok = false;
  } catch (const tbatch::ShapeError& e) {
    std::cout << "rejected: " << e.what() << "\n";
  }

  // Indexing: robot 2 (a view), the first two steps of every robot, the low-battery steps.
  const TensorDict robot2 = td.index({2});
  ok = ok && robot2.batch_size() == Shape{steps} &&
       robot2.get<float>("joints").shape() == Shape{steps, joints};
  for (index_t t = 0; t < steps; ++t)
    ok = ok && holds_sample(robot2, t, 2, t);
  ok = ok && robot2.names().size() == 1 && robot2.names()[0] == "time";

  const TensorDict first_steps = td.index({Ellipsis, Slice{{}, 2}});
  ok = ok && first_steps.get<float>("joints").shape() == Shape{robots, 2, joints} &&
       first_steps.get<float>({"target", "joints"}).shape() == Shape{robots, 2, joints};

  const Tensor<bool> low = battery < 0.5f;
  const index_t low_count = sum(low).item();       // a bool sum counts, in int64
  const TensorDict low_battery = td.index({low});  // a copy, one batch dim of the selected steps
  ok = ok && low_battery.batch_size() == Shape{low_count};
  for (index_t r = 0, k = 0; r < robots; ++r)
    for (index_t t = 0; t < steps; ++t)
      if (low(r, t)) ok = ok && holds_sample(low_battery, k++, r, t);
  std::cout << "robot 2: batch_size " << robot2.batch_size() << "; first 2 steps: joints "
            << first_steps.get<float>("joints").shape() << "; low battery: " << low_count
            << " steps\n";

  // Flatten robots x steps into 24 samples (a view of the same storage; names are erased).
  const TensorDict samples = td.reshape({robots * steps});
  ok = ok && samples.batch_size() == Shape{robots * steps} &&
       samples.get<float>("joints").shape() == Shape{robots * steps, joints} &&
       samples.get<float>("joints").shares_storage_with(joint_values);
  for (index_t k = 0; k < robots * steps; ++k)
    ok = ok && holds_sample(samples, k, k / steps, k % steps);

  // Shuffle the samples (an index tensor gives a copy) and cut them into minibatches of 8.
  std::vector<index_t> order(robots * steps);
  std::iota(order.begin(), order.end(), index_t(0));
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  const Tensor<index_t> permutation({robots * steps}, order);
  const std::vector<TensorDict> minibatches = samples.index({permutation}).split(8);
  std::cout << minibatches.size() << " minibatches:";
  for (std::size_t m = 0; m < minibatches.size(); ++m) {
    const TensorDict& mb = minibatches[m];
    ok = ok && mb.batch_size() == Shape{8};
    for (index_t k = 0; k < 8; ++k) {
      const index_t sample = order[m * 8 + static_cast<std::size_t>(k)];
      ok = ok && holds_sample(mb, k, sample / steps, sample % steps);
    }
    const float mean_battery = mean(mb.get<float>("battery")).item();
    std::printf(" [%zu] mean battery %.3f", m, mean_battery);
  }
  std::printf("\n");

  // Stack the minibatches along a new dim (3, 8), flatten again and undo the shuffle by writing
  // each sample back to its position: into an empty TensorDict, whose entries index_put
  // creates (zero-filled) on the first write.
  const TensorDict stacked = TensorDict::stack(minibatches, 0);
  ok = ok && stacked.batch_size() == Shape{3, 8} &&
       stacked.get<float>("joints").shape() == Shape{3, 8, joints};
  TensorDict restored(Shape{robots * steps});
  restored.index_put({permutation}, stacked.reshape({-1}));
  const TensorDict trajectories = restored.reshape({robots, steps});
  ok = ok && (trajectories == td).all();
  std::cout << "stacked " << stacked.batch_size() << ", unshuffled back to "
            << trajectories.batch_size() << ": "
            << ((trajectories == td).all() ? "equal" : "DIFFERENT") << "\n";

  // Time steps one by one (unbind, views) and back with stack along dim 1.
  const std::vector<TensorDict> per_step = td.unbind(1);
  ok = ok && per_step.size() == static_cast<std::size_t>(steps) &&
       (TensorDict::stack(per_step, 1) == td).all();

  std::printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
