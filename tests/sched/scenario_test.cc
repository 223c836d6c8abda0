// Runs every tests/sched/scenarios/*.yaml as its own test case: loads the snapshot, calls
// plan(), checks the invariants and compares the plan with the file's `expect:` block. A
// mismatch prints a line per difference followed by the whole plan.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "sched/invariants.h"
#include "sched/plan.h"
#include "tests/sched/scenario_loader.h"

namespace trainyard::sched::testing {
namespace {

namespace fs = std::filesystem;

fs::path scenario_dir() {
  return fs::path(TY_SOURCE_DIR) / "tests" / "sched" / "scenarios";
}

std::vector<std::string> scenario_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(scenario_dir())) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string filter_name(uint8_t filter) {
  for (const auto& [name, bit] : kFilterNames) {
    if (bit == filter) return name;
  }
  return fmt::format("{}", filter);
}

std::string ids(const std::set<int64_t>& s) {
  std::string out;
  for (int64_t id : s) out += fmt::format("{}{}", out.empty() ? "" : ", ", id);
  return "{" + out + "}";
}

std::string render_wait(const WaitReason& w) {
  return fmt::format("{}/{} arg={} filter={}", stage_name(w.stage), wait_code_name(w.code), w.arg,
                     filter_name(w.filter));
}

std::string render_plan(const Snapshot& snap, const Plan& p) {
  std::string out;
  for (const StartAction& s : p.starts) {
    out += fmt::format("  start {}:", s.job.value());
    for (const Assignment& a : s.placement) {
      out += fmt::format(" w{}@{}/gpu{}", a.worker, snap.nodes[a.node_idx].name, a.gpu_idx);
      if (a.mig_start >= 0) out += fmt::format("/mig{}", a.mig_start);
      if (a.milli > 0 && a.milli < 1000) out += fmt::format("/{}m", a.milli);
    }
    out += "\n";
  }
  for (const PreemptAction& x : p.preemptions) {
    out += fmt::format("  preempt {} for {} ({})\n", x.job.value(), x.for_job.value(),
                       scenario_internal::cause_key(x.cause));
  }
  for (const WaitReason& w : p.waiting) {
    out += fmt::format("  wait {}: {}\n", w.job.value(), render_wait(w));
  }
  return out;
}

// Compares one expected start with the actual placement; appends differences to `diff`.
void diff_start(const Snapshot& snap, const ExpectedStart& e, const StartAction& s,
                std::vector<std::string>& diff) {
  std::map<std::string, std::set<int>> gpus;
  std::multiset<int> mig;
  std::set<std::string> nodes;
  for (const Assignment& a : s.placement) {
    const std::string& name = snap.nodes[a.node_idx].name;
    nodes.insert(name);
    if (a.gpu_idx >= 0) gpus[name].insert(a.gpu_idx);
    if (a.mig_start >= 0) mig.insert(a.mig_start);
  }
  auto list = [](const auto& c) {
    std::string out;
    for (const auto& x : c) out += fmt::format("{}{}", out.empty() ? "" : ",", x);
    return "[" + out + "]";
  };
  if (e.nodes && *e.nodes != nodes) {
    diff.push_back(
        fmt::format("job {}: expected nodes {}, got {}", e.job, list(*e.nodes), list(nodes)));
  }
  if (e.gpus && *e.gpus != gpus) {
    for (const auto& [node, want] : *e.gpus) {
      const auto it = gpus.find(node);
      const std::set<int> got = it == gpus.end() ? std::set<int>{} : it->second;
      if (got != want)
        diff.push_back(fmt::format("job {}: expected GPUs {} on {}, got {}", e.job, list(want),
                                   node, list(got)));
    }
    for (const auto& [node, got] : gpus) {
      if (!e.gpus->contains(node))
        diff.push_back(fmt::format("job {}: unexpected GPUs {} on {}", e.job, list(got), node));
    }
  }
  if (e.workers && *e.workers != s.workers) {
    diff.push_back(
        fmt::format("job {}: expected {} workers, got {}", e.job, *e.workers, s.workers));
  }
  if (e.mig_starts && *e.mig_starts != mig) {
    diff.push_back(fmt::format("job {}: expected MIG starts {}, got {}", e.job, list(*e.mig_starts),
                               list(mig)));
  }
}

void diff_sets(const char* what, const std::set<int64_t>& want, const std::set<int64_t>& got,
               std::vector<std::string>& diff) {
  if (want == got) return;
  std::set<int64_t> missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::inserter(missing, missing.end()));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(),
                      std::inserter(extra, extra.end()));
  diff.push_back(fmt::format("{}: expected {}, got {} (missing {}, unexpected {})", what, ids(want),
                             ids(got), ids(missing), ids(extra)));
}

std::vector<std::string> diff_plan(const Scenario& sc, const Plan& p) {
  std::vector<std::string> diff;
  std::set<int64_t> want_starts, got_starts, want_pre, got_pre;
  for (const auto& e : sc.starts) want_starts.insert(e.job);
  for (const auto& s : p.starts) got_starts.insert(s.job.value());
  diff_sets("starts", want_starts, got_starts, diff);
  for (const auto& e : sc.starts) {
    for (const auto& s : p.starts) {
      if (s.job.value() == e.job) diff_start(sc.snap, e, s, diff);
    }
  }
  for (const auto& e : sc.preemptions) want_pre.insert(e.job);
  for (const auto& x : p.preemptions) got_pre.insert(x.job.value());
  diff_sets("preemptions", want_pre, got_pre, diff);
  for (const auto& e : sc.preemptions) {
    for (const auto& x : p.preemptions) {
      if (x.job.value() != e.job) continue;
      if (e.for_job && *e.for_job != x.for_job.value())
        diff.push_back(fmt::format("preemption of {}: expected for job {}, got {}", e.job,
                                   *e.for_job, x.for_job.value()));
      if (e.cause && *e.cause != x.cause)
        diff.push_back(fmt::format("preemption of {}: expected cause {}, got {}", e.job,
                                   scenario_internal::cause_key(*e.cause),
                                   scenario_internal::cause_key(x.cause)));
    }
  }
  for (const auto& [id, e] : sc.waiting) {
    const auto it = std::find_if(p.waiting.begin(), p.waiting.end(),
                                 [&](const WaitReason& w) { return w.job.value() == id; });
    if (it == p.waiting.end()) {
      diff.push_back(fmt::format("job {}: expected to wait ({}), but no wait reason", id,
                                 wait_code_name(e.code)));
      continue;
    }
    const bool same = it->code == e.code && (!e.stage || *e.stage == it->stage) &&
                      (!e.arg || *e.arg == it->arg) && (!e.filter || *e.filter == it->filter);
    if (!same) {
      diff.push_back(
          fmt::format("job {}: expected wait {}{}{}{}, got {}", id, wait_code_name(e.code),
                      e.stage ? fmt::format(" stage={}", stage_name(*e.stage)) : "",
                      e.arg ? fmt::format(" arg={}", *e.arg) : "",
                      e.filter ? " filter=" + filter_name(*e.filter) : "", render_wait(*it)));
    }
  }
  return diff;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, PlanMatchesExpectation) {
  const std::string file = GetParam();
  auto loaded = parse_scenario(read_text(scenario_dir() / file), file);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const Scenario& sc = *loaded;
  const Plan p = plan(sc.snap, sc.cfg, 1);
  const util::Status invariants = check_plan(sc.snap, p, true, sc.cfg.min_runtime);
  EXPECT_TRUE(invariants.is_ok()) << file << ": " << invariants.to_string();
  const std::vector<std::string> diff = diff_plan(sc, p);
  if (!diff.empty()) {
    std::string text;
    for (const auto& d : diff) text += "  - " + d + "\n";
    ADD_FAILURE() << file << " (" << sc.cfg.name << "): plan differs from expect:\n"
                  << text << "actual plan:\n"
                  << render_plan(sc.snap, p) << "scenario: " << sc.description;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, ScenarioTest, ::testing::ValuesIn(scenario_files()), test_name);

TEST(ScenarioLoader, DirectoryHoldsScenariosForEveryPolicy) {
  std::set<std::string> seen;
  for (const auto& file : scenario_files()) {
    auto sc = parse_scenario(read_text(scenario_dir() / file), file);
    ASSERT_TRUE(sc.is_ok()) << sc.status().to_string();
    seen.insert(sc->cfg.name);
  }
  for (const auto& p : policies()) EXPECT_TRUE(seen.contains(std::string(p.name))) << p.name;
}

constexpr const char* kMinimal = R"(
description: minimal
policy: fifo
nodes: [{name: n1, gpus: 8, model: H100}]
jobs:
  - {id: 1, gpus: 2}
expect:
  starts: [1]
  preemptions: []
)";

TEST(ScenarioLoader, AcceptsMinimalFile) {
  auto sc = parse_scenario(kMinimal, "minimal.yaml");
  ASSERT_TRUE(sc.is_ok()) << sc.status().to_string();
  EXPECT_EQ(sc->snap.jobs.size(), 1u);
  EXPECT_EQ(sc->snap.jobs[0].worker.gpus, 2);
}

TEST(ScenarioLoader, RejectsUnknownKeysWithLine) {
  std::string text = kMinimal;
  text.replace(text.find("gpus: 2"), 7, "gpu: 2");
  auto sc = parse_scenario(text, "typo.yaml");
  ASSERT_FALSE(sc.is_ok());
  EXPECT_NE(sc.status().message().find("typo.yaml:6: jobs[]: unknown key 'gpu'"), std::string::npos)
      << sc.status().message();
}

TEST(ScenarioLoader, RejectsUnknownTopLevelAndExpectKeys) {
  EXPECT_FALSE(parse_scenario(std::string(kMinimal) + "polcy: fair\n", "a.yaml").is_ok());
  std::string text = kMinimal;
  text.replace(text.find("preemptions"), 11, "preemption");
  EXPECT_FALSE(parse_scenario(text, "b.yaml").is_ok());
}

TEST(ScenarioLoader, RejectsUnknownWaitCode) {
  auto sc = parse_scenario(std::string(kMinimal) + "  waiting: {1: NoCapacity}\n", "c.yaml");
  ASSERT_FALSE(sc.is_ok());
  EXPECT_NE(sc.status().message().find("NoCapacity"), std::string::npos);
}

}  // namespace
}  // namespace trainyard::sched::testing
