// The server's nodes under stable ids: placements name nodes by id, so nodes joining (a cloud
// node inserted by its fleet slot) or leaving never change what a placement refers to, while
// the scheduler sees them in the order the simulator's snapshot would.
#include "server/node_book.h"

#include <gtest/gtest.h>

namespace trainyard::server {
namespace {

LocalNode node(int64_t id, std::string name, bool cloud = false, int slot = -1) {
  LocalNode n;
  n.node.id = util::NodeId(id);
  n.node.name = std::move(name);
  n.node.gpu_count = 8;
  n.cloud = cloud;
  n.slot = slot;
  return n;
}

std::vector<std::string> names(const NodeBook& book) {
  std::vector<std::string> out;
  for (const auto& n : book) out.push_back(n.node.name);
  return out;
}

TEST(NodeBook, CloudNodesTakeTheirSlotOrderAfterLocalNodes) {
  NodeBook book;
  book.add(node(1, "local"));
  book.add(node(2, "spot-2", true, 2));
  book.add(node(3, "spot-3", true, 3));
  book.add(node(4, "spot-1", true, 1));  // a freed slot is reused: it goes before slot 2
  EXPECT_EQ(names(book), (std::vector<std::string>{"local", "spot-1", "spot-2", "spot-3"}));
  EXPECT_EQ(book.position(util::NodeId(4)), 1);
  EXPECT_EQ(book.position(util::NodeId(3)), 3);
  EXPECT_EQ(book.position(util::NodeId(99)), -1);
  ASSERT_NE(book.find("spot-3"), nullptr);
  EXPECT_EQ(book.find("spot-3")->node.id, util::NodeId(3));
  EXPECT_EQ(book.find("absent"), nullptr);
}

TEST(NodeBook, PlacementsKeepTheirNodesWhenOthersJoinAndLeave) {
  NodeBook book;
  book.add(node(1, "local"));
  book.add(node(2, "spot-1", true, 1));
  book.add(node(3, "spot-2", true, 2));
  // plan() placed a job on snapshot position 2 (spot-2), GPU 5.
  const Placement placed =
      book.to_placed({{.worker = 0, .node_idx = 2, .gpu_idx = 5, .milli = 1000}});
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].node, util::NodeId(3));
  // spot-1 leaves and a new node takes slot 0, before everything cloud.
  book.remove(util::NodeId(2));
  book.add(node(4, "spot-0", true, 0));
  EXPECT_EQ(book.of(placed[0]).node.name, "spot-2");
  const auto back = book.to_assignments(placed);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].node_idx, 2);  // local, spot-0, spot-2
  EXPECT_EQ(back[0].gpu_idx, 5);
  EXPECT_EQ(back[0].milli, 1000);
  // A placement on a node that left is dropped from the scheduler's view, not misread.
  book.remove(util::NodeId(3));
  EXPECT_TRUE(book.to_assignments(placed).empty());
  EXPECT_EQ(book.find(util::NodeId(3)), nullptr);
}

TEST(NodeBook, PlacedWorkersAndNodes) {
  const Placement p = {{.worker = 0, .node = util::NodeId(1), .gpu_idx = 0},
                       {.worker = 2, .node = util::NodeId(7), .gpu_idx = 1}};
  EXPECT_EQ(placed_workers(p), 3);
  EXPECT_EQ(placed_workers({}), 0);
  EXPECT_TRUE(placed_on(p, util::NodeId(7)));
  EXPECT_FALSE(placed_on(p, util::NodeId(2)));
}

}  // namespace
}  // namespace trainyard::server
