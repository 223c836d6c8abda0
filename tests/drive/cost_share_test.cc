// The share of a node's cost a placement is billed: a GPU or a fraction of one by its milli
// share, a MIG instance by its compute slices out of 7, nothing for a CPU-only worker.
#include "drive/cost_share.h"

#include <gtest/gtest.h>

#include "sched/snapshot_builder.h"

namespace trainyard::drive {
namespace {

int8_t profile_index(const model::Accelerator& acc, std::string_view name) {
  for (size_t i = 0; i < acc.mig_profiles.size(); ++i)
    if (acc.mig_profiles[i].name == name) return static_cast<int8_t>(i);
  ADD_FAILURE() << name << " is not a profile of " << acc.name;
  return -1;
}

TEST(HeldMilli, BillsWholeAndFractionalGpusByTheirShareAndMigByComputeSlices) {
  const model::Accelerator* a100 = model::find_accelerator("A100-80GB");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(held_milli(a100, {.gpu_idx = 0, .milli = 1000}), 1000);
  EXPECT_EQ(held_milli(a100, {.gpu_idx = 0, .milli = 250}), 250);
  EXPECT_EQ(held_milli(a100, {.gpu_idx = -1}), 0);  // a worker without a GPU
  const sched::Assignment mig3{.gpu_idx = 0, .mig_profile = profile_index(*a100, "3g.40gb")};
  EXPECT_EQ(held_milli(a100, mig3), 3000 / 7);
  const sched::Assignment mig1{.gpu_idx = 0, .mig_profile = profile_index(*a100, "1g.10gb")};
  EXPECT_EQ(held_milli(a100, mig1), 1000 / 7);
  EXPECT_EQ(held_milli(nullptr, mig3), 0);  // a model the catalog does not know
}

TEST(HeldMilli, ReadsTheNodesAcceleratorFromTheSnapshot) {
  sched::Snapshot snap;
  model::Node n;
  n.name = "a100-0";
  n.gpu_model = "A100-80GB";
  n.gpu_count = 8;
  n.mig_enabled = true;
  sched::add_node(snap, n);
  const model::Accelerator& a100 = *model::find_accelerator("A100-80GB");
  const sched::Assignment mig{
      .node_idx = 0, .gpu_idx = 3, .mig_profile = profile_index(a100, "3g.40gb"), .mig_start = 4};
  EXPECT_EQ(held_milli(snap, mig), 3000 / 7);
  EXPECT_EQ(held_milli(snap, {.node_idx = 0, .gpu_idx = 1, .milli = 1000}), 1000);
}

}  // namespace
}  // namespace trainyard::drive
