// Validation at the API's door: every error the job-spec parser can give names its field in the
// API's JSON error (error_field()), and tokens carry only team names a spec may carry, so jobs
// submitted with them can be stored and read back.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/job_manifest.h"
#include "plane_fixture.h"
#include "server/control_plane.h"
#include "server/http_api.h"

namespace trainyard::server {
namespace {

// Line numbers in the cases below refer to this document.
constexpr std::string_view kBase = R"(apiVersion: trainyard.dev/v1
kind: Job
metadata:
  name: resnet50
spec:
  workers: 2
  template:
    command: [python, train.py]
    resources:
      limits:
        nvidia.com/gpu: 2
)";

// kBase with line `line` (1-based) replaced by `text` (which may hold several lines).
std::string with_line(int line, std::string_view text) {
  std::istringstream in{std::string(kBase)};
  std::string out, current;
  for (int n = 1; std::getline(in, current); ++n)
    out += (n == line ? std::string(text) : current) + "\n";
  return out;
}

// A job whose template holds `lines` after its command (indented four spaces).
std::string with_template(std::string_view lines) {
  return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: t}\nspec:\n  template:\n"
         "    command: [x]\n" +
         std::string(lines);
}

std::string with_limits(std::string_view limits) {
  return with_template("    resources:\n      limits: " + std::string(limits) + "\n");
}

struct Case {
  std::string spec;
  std::string field;
};

std::vector<Case> invalid_specs() {
  const std::string big(131072, 'a');
  std::string many_args = "    args: [";
  for (int i = 0; i < 7; ++i) many_args += "\"" + std::string(131071, 'a') + "\", ";
  for (int i = 0; i < 13200; ++i) many_args += "x, ";
  many_args += "]\n";
  const std::string limits = "spec.template.resources.limits";
  const std::string gpu = limits + ".nvidia.com/gpu";
  return {
      // The document's own fields.
      {with_line(1, "apiVersion: batch/v1"), "apiVersion"},
      {with_line(1, ""), "apiVersion"},
      {with_line(1, "apiVersion: [trainyard.dev/v1]"), "apiVersion"},
      {with_line(2, "kind: Pod"), "kind"},
      {with_line(2, ""), "kind"},
      {with_line(2, "kind: {a: 1}"), "kind"},
      {std::string(kBase) + "status: {}\n", "status"},
      {std::string(kBase) + "kind: Job\n", "kind"},
      {"apiVersion: trainyard.dev/v1\nkind: Job\nspec: {template: {command: [x]}}\n", "metadata"},
      {"apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: x\nspec: {}\n", "metadata"},
      {"apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\n", "spec"},
      {"apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\nspec: [1]\n", "spec"},
      // metadata
      {with_line(4, "  name: My_Job"), "metadata.name"},
      {with_line(4, "  name: \"42\""), "metadata.name"},
      {with_line(4, "  name: [a]"), "metadata.name"},
      {with_line(4, "  name: " + std::string(64, 'a')), "metadata.name"},
      {with_line(4, "  name: a\n  name: b"), "metadata.name"},
      {with_line(4, "  labels: {a: b}"), "metadata.name"},
      {with_line(4, "  name: a\n  colour: red"), "metadata.colour"},
      {with_line(4, "  name: a\n  labels: [x]"), "metadata.labels"},
      {with_line(4, "  name: a\n  labels: {\"bad key!\": x}"), "metadata.labels"},
      {with_line(4, "  name: a\n  labels: {a: \"bad value!\"}"), "metadata.labels.a"},
      {with_line(4, "  name: a\n  labels: {a: [1]}"), "metadata.labels.a"},
      {with_line(4, "  name: a\n  labels: {trainyard.dev/sim-gpu-profile: sleepy}"),
       "metadata.labels.trainyard.dev/sim-gpu-profile"},
      // spec: scalars
      {with_line(6, "  worker: 2"), "spec.worker"},
      {with_line(6, "  workers: 0"), "spec.workers"},
      {with_line(6, "  workers: many"), "spec.workers"},
      {with_line(6, "  workers: [1]"), "spec.workers"},
      {with_line(6, "  workers: 2\n  workers: 3"), "spec.workers"},
      {with_line(6, "  team: \"a b\""), "spec.team"},
      {with_line(6, "  team: \"\""), "spec.team"},
      {with_line(6, "  team: ml/vision"), "spec.team"},
      {with_line(6, "  team: " + std::string(64, 't')), "spec.team"},
      {with_line(6, "  team: [a]"), "spec.team"},
      {with_line(6, "  priorityClass: urgent"), "spec.priorityClass"},
      {with_line(6, "  priority: -1"), "spec.priority"},
      {with_line(6, "  priority: 1e3"), "spec.priority"},
      {with_line(6, "  preemptible: yes"), "spec.preemptible"},
      {with_line(6, "  backoffLimit: 101"), "spec.backoffLimit"},
      {with_line(6, "  activeDeadlineSeconds: 0"), "spec.activeDeadlineSeconds"},
      // spec: lists and mappings
      {with_line(6, "  dependsOn: prep"), "spec.dependsOn"},
      {with_line(6, "  dependsOn: [resnet50]"), "spec.dependsOn[0]"},
      {with_line(6, "  dependsOn: [\"Not A Name\"]"), "spec.dependsOn[0]"},
      {with_line(6, "  dependsOn: [a, a]"), "spec.dependsOn[1]"},
      {with_line(6, "  dependsOn: [{a: 1}]"), "spec.dependsOn[0]"},
      {with_line(6, "  nodeSelector: [a]"), "spec.nodeSelector"},
      {with_line(6, "  nodeSelector: {\"bad key!\": x}"), "spec.nodeSelector"},
      {with_line(6, "  nodeSelector: {trainyard.dev/gpu.product: H900}"),
       "spec.nodeSelector.trainyard.dev/gpu.product"},
      {with_line(6, "  nodeSelector: {zone: \"a b\"}"), "spec.nodeSelector.zone"},
      {with_line(6, "  checkpoint: x"), "spec.checkpoint"},
      {with_line(6, "  checkpoint: {dir: ckpt}"), "spec.checkpoint.dir"},
      {with_line(6, "  checkpoint: {gracePeriodSeconds: 7200}"),
       "spec.checkpoint.gracePeriodSeconds"},
      {with_line(6, "  checkpoint: {intervalSeconds: -5}"), "spec.checkpoint.intervalSeconds"},
      {with_line(6, "  checkpoint: {every: 5}"), "spec.checkpoint.every"},
      {"apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\nspec: {workers: 1}\n",
       "spec.template"},
      {"apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\nspec: {template: [x]}\n",
       "spec.template"},
      // spec.template: the process
      {with_line(8, "    args: [x]"), "spec.template.command"},
      {with_line(8, "    command: python train.py"), "spec.template.command"},
      {with_line(8, "    command: []"), "spec.template.command"},
      {with_line(8, "    command: [\"\"]"), "spec.template.command[0]"},
      {with_line(8, "    command: [python, {a: 1}]"), "spec.template.command[1]"},
      {with_line(8, "    command: [\"" + big + "\"]"), "spec.template.command[0]"},
      {with_template("    args: {a: 1}\n"), "spec.template.args"},
      {with_template("    args: [[1]]\n"), "spec.template.args[0]"},
      {with_template("    args: [x, \"" + big + "\"]\n"), "spec.template.args[1]"},
      {with_template(many_args), "spec.template"},
      {with_template("    env: x=1\n"), "spec.template.env"},
      {with_template("    env: [{value: x}]\n"), "spec.template.env[0].name"},
      {with_template("    env: [{name: CUDA_VISIBLE_DEVICES}]\n"), "spec.template.env[0].name"},
      {with_template("    env: [{name: \"1ABC\"}]\n"), "spec.template.env[0].name"},
      {with_template("    env: {TRAINYARD_JOB_ID: 1}\n"), "spec.template.env.TRAINYARD_JOB_ID"},
      {with_template("    env: {1ABC: x}\n"), "spec.template.env"},
      {with_template("    env: {\"A B\": x}\n"), "spec.template.env"},
      {with_template("    env: [{name: A}, {name: A}]\n"), "spec.template.env[1].name"},
      {with_template("    env: [{name: A, value: [1]}]\n"), "spec.template.env[0].value"},
      {with_template("    env: [{name: A, extra: 1}]\n"), "spec.template.env[0].extra"},
      {with_template("    env: [{name: A, value: \"" + big + "\"}]\n"),
       "spec.template.env[0].value"},
      {with_template("    env: {BIG: \"" + big + "\"}\n"), "spec.template.env.BIG"},
      {with_template("    workingDir: rel\n"), "spec.template.workingDir"},
      {with_template("    workingDir: /" + std::string(5000, 'w') + "\n"),
       "spec.template.workingDir"},
      {with_line(6, "  checkpoint: {dir: /" + std::string(5000, 'c') + "}"), "spec.checkpoint.dir"},
      {with_template("    wd: /x\n"), "spec.template.wd"},
      // spec.template.resources
      {with_template("    resources: x\n"), "spec.template.resources"},
      {with_template("    resources: {requests: {cpu: 1}}\n"), "spec.template.resources.requests"},
      {with_limits("[1]"), limits},
      {with_limits("{nvidia.com/gpu: two}"), gpu},
      {with_limits("{nvidia.com/gpu: 32}"), gpu},
      {with_limits("{nvidia.com/gpu: \"-0\"}"), gpu},
      {with_limits("{nvidia.com/gpu: 1e0}"), gpu},
      {with_limits("{nvidia.com/gpu: \"0x1\"}"), gpu},
      {with_limits("{nvidia.com/gpu: \" 1\"}"), gpu},
      {with_limits("{nvidia.com/gpu: 1.5}"), gpu},
      {with_limits("{nvidia.com/gpu: 0.0001}"), gpu},
      {with_limits("{nvidia.com/gpu: [1]}"), gpu},
      {with_limits("{nvidia.com/gpus: 2}"), limits + ".nvidia.com/gpus"},
      {with_limits("{nvidia.com/gpu: 1, nvidia.com/mig-1g.10gb: 1}"), limits},
      {with_limits("{nvidia.com/mig-1g.10gb: 1, nvidia.com/mig-2g.20gb: 1}"), limits},
      {with_limits("{nvidia.com/mig-1g.10gb: 2}"), limits + ".nvidia.com/mig-1g.10gb"},
      {with_limits("{nvidia.com/mig-9g.99gb: 1}"), limits + ".nvidia.com/mig-9g.99gb"},
      {"apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: t}\nspec:\n"
       "  nodeSelector: {trainyard.dev/gpu.product: T4}\n  template:\n    command: [x]\n"
       "    resources: {limits: {nvidia.com/mig-1g.10gb: 1}}\n",
       limits + ".nvidia.com/mig-1g.10gb"},
      {with_limits("{cpu: -1}"), limits + ".cpu"},
      {with_limits("{cpu: 1e3}"), limits + ".cpu"},
      {with_limits("{cpu: .nan}"), limits + ".cpu"},
      {with_limits("{cpu: [1]}"), limits + ".cpu"},
      {with_limits("{memory: lots}"), limits + ".memory"},
      {with_limits("{memory: \"-0\"}"), limits + ".memory"},
      {with_limits("{memory: 1.5Gi}"), limits + ".memory"},
  };
}

TEST(SpecErrorField, EveryParserErrorNamesItsField) {
  const std::vector<Case> cases = invalid_specs();
  ASSERT_GE(cases.size(), 70u);
  std::set<std::string> messages;
  for (const Case& c : cases) {
    auto m = model::parse_job_manifest(c.spec, "job.yaml");
    ASSERT_FALSE(m.is_ok()) << c.field << "\n" << c.spec.substr(0, 400);
    const std::string& msg = m.status().message();
    messages.insert(msg);
    EXPECT_EQ(error_field(msg), c.field) << msg.substr(0, 400);
    // The located form: "job.yaml:<line>: ..." names a line.
    EXPECT_TRUE(msg.starts_with("job.yaml:")) << msg.substr(0, 400);
  }
  EXPECT_EQ(messages.size(), cases.size()) << "each case should give a different error";
}

TEST(SpecErrorField, FileNamesDoNotConfuseIt) {
  const std::string spec = with_line(6, "  workers: many");
  for (const char* file : {"spec.yaml", "spec.template.yaml", "my job: v2.yaml", "request",
                           "metadata", "a:1", "spec.workers"}) {
    auto m = model::parse_job_manifest(spec, file);
    ASSERT_FALSE(m.is_ok());
    EXPECT_EQ(error_field(m.status().message()), "spec.workers") << m.status().message();
  }
}

TEST(SpecErrorField, WholeDocumentErrorsHaveNoField) {
  for (const std::string& doc :
       {std::string(""), std::string("# nothing\n"), std::string("- a\n- b\n"),
        std::string("apiVersion: [\n"), std::string(kBase) + "---\n" + std::string(kBase),
        with_line(4, "  name: \xff"), with_line(4, std::string("  name: a\0b", 11)),
        std::string((1 << 20) + 1, ' ')}) {
    auto m = model::parse_job_manifest(doc, "job.yaml");
    ASSERT_FALSE(m.is_ok()) << doc.substr(0, 100);
    EXPECT_EQ(error_field(m.status().message()), "") << m.status().message();
  }
}

TEST(SpecErrorField, ServerChecksNameTheirFieldToo) {
  EXPECT_EQ(error_field("spec.dependsOn: no job named 'x' in team 'y'; submit it first or give "
                        "its id"),
            "spec.dependsOn");
  EXPECT_EQ(error_field("spec.template.resources.limits.cpu: a worker asks for 64 CPUs but the "
                        "largest node has 2; lower the request"),
            "spec.template.resources.limits.cpu");
  EXPECT_EQ(error_field("spec.team: a token of team 'a' cannot submit jobs for team 'b'"),
            "spec.team");
  EXPECT_EQ(error_field("job 42 does not exist"), "");
  EXPECT_EQ(error_field("specifically: nothing"), "");
}

class TokenValidationTest : public PlaneTest {
 protected:
  util::Status token_error(const std::string& team, const std::string& name, bool admin = false) {
    auto r = plane_->create_token(team, name, admin, admin_);
    return r.is_ok() ? util::Status::ok() : r.status();
  }
};

TEST_F(TokenValidationTest, TeamsFollowTheSpecRule) {
  for (const std::string& team :
       {std::string("a b"), std::string("nul\0byte", 8), std::string(100000, 'x'),
        std::string("ml/vision"), std::string("-lead"), std::string("tab\tteam"),
        std::string(64, 't')}) {
    const util::Status st = token_error(team, "");
    ASSERT_FALSE(st.is_ok()) << team.substr(0, 80);
    EXPECT_EQ(st.code(), util::StatusCode::InvalidArgument);
    EXPECT_TRUE(st.message().starts_with("team: ")) << st.message();
    EXPECT_NE(st.message().find("is not a team name: use 1 to 63 letters"), std::string::npos)
        << st.message();
    EXPECT_LT(st.message().size(), 300u) << "a long team is not echoed whole";
  }
  EXPECT_FALSE(token_error("a b", "", /*admin=*/true).is_ok());
  EXPECT_TRUE(token_error("ML_team.v2", "").is_ok());
  EXPECT_TRUE(token_error(std::string(63, 't'), "").is_ok());
  EXPECT_TRUE(token_error("", "root", /*admin=*/true).is_ok());
}

TEST_F(TokenValidationTest, NamesAreShortAndPrintable) {
  EXPECT_TRUE(token_error("vision", std::string(63, 'n')).is_ok());
  EXPECT_TRUE(token_error("vision", "ana's laptop").is_ok());
  for (const std::string& name : {std::string(64, 'n'), std::string("line\nbreak"),
                                  std::string("nul\0", 4), std::string("del\x7f")}) {
    const util::Status st = token_error("vision", name);
    ASSERT_FALSE(st.is_ok()) << name;
    EXPECT_EQ(st.code(), util::StatusCode::InvalidArgument);
    EXPECT_TRUE(st.message().starts_with("name: a token name has at most 63 bytes"))
        << st.message();
  }
}

// A team token's team becomes the team of its jobs; with the one rule such jobs can be stored and
// are there again after a restart.
TEST_F(TokenValidationTest, JobsOfATeamTokenSurviveARestart) {
  auto token = plane_->create_token("ML_team.v2", "", false, admin_);
  ASSERT_TRUE(token.is_ok()) << token.status().to_string();
  const Principal member{.team = "ML_team.v2", .name = "ML_team.v2"};
  auto job = plane_->submit(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\nspec:\n  template:\n"
      "    command: [train]\n",
      "job.yaml", member);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  const int64_t id = (*job)["id"].get<int64_t>();
  open();
  auto again = plane_->get_job(util::JobId(id), admin_);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)["team"], "ML_team.v2");
  EXPECT_EQ((*again)["state"], "pending");
}

// Errors the server finds after the spec parsed point at the field's line, as the parser's do.
using SubmitErrorTest = PlaneTest;

TEST_F(SubmitErrorTest, ChecksAfterParsingNameTheLine) {
  const std::string head =
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: late}\nspec:\n";
  auto error_of = [&](const std::string& yaml, const Principal& who) {
    auto r = plane_->submit(yaml, "job.yaml", who);
    EXPECT_FALSE(r.is_ok()) << yaml;
    return r.is_ok() ? std::string() : r.status().message();
  };
  auto expect_starts = [](const std::string& message, std::string_view start) {
    EXPECT_TRUE(message.starts_with(start)) << message;
  };
  // Too many GPUs for the largest node (4 here): line 9 holds the request.
  expect_starts(error_of(head + "  template:\n    command: [train]\n    resources:\n      limits:\n"
                                "        nvidia.com/gpu: 8\n",
                         admin_),
                "job.yaml:9: spec.template.resources.limits.nvidia.com/gpu: ");
  // The second dependency is unknown: its own line.
  submit(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: prep}\nspec:\n  template:\n"
      "    command: [prep]\n");
  expect_starts(error_of(head + "  dependsOn:\n  - prep\n  - nope\n  template:\n"
                                "    command: [train]\n",
                         admin_),
                "job.yaml:7: spec.dependsOn[1]: no job named 'nope'");
  // Another team's spec from a team token: the team field's line.
  expect_starts(
      error_of(head + "  team: b\n  template:\n    command: [train]\n", {.team = "a", .name = "a"}),
      "job.yaml:5: spec.team: a token of team 'a'");
}

}  // namespace
}  // namespace trainyard::server
