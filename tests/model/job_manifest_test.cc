// Valid job manifests: fields land in JobSpec and the manifest, defaults are filled in, the
// JSON and YAML writers round-trip, and every example in examples/jobs/ parses.
#include "model/job_manifest.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace trainyard::model {
namespace {

JobManifest parse_ok(std::string_view text) {
  auto m = parse_job_manifest(text, "job.yaml");
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m.is_ok() ? *m : JobManifest{};
}

constexpr std::string_view kFull = R"(apiVersion: trainyard.dev/v1
kind: Job
metadata:
  name: resnet50
  labels: {project: vision, owner: ana}
spec:
  team: vision
  priorityClass: high
  priority: 150
  workers: 2
  preemptible: false
  backoffLimit: 5
  activeDeadlineSeconds: 3600
  dependsOn: [prep-data, 42]
  nodeSelector: {trainyard.dev/gpu.product: h100, zone: us-east-1a}
  checkpoint: {dir: /ckpt/resnet, gracePeriodSeconds: 60, intervalSeconds: 600}
  template:
    command: [python, train.py]
    args: [--epochs, "10"]
    env: [{name: FOO, value: bar}, {name: EMPTY}, {name: N, value: 7}]
    workingDir: /home/me/proj
    resources:
      limits:
        nvidia.com/gpu: 2
        cpu: 8
        memory: 32Gi
)";

TEST(JobManifest, ParsesEveryFieldIntoSpecAndManifest) {
  const JobManifest m = parse_ok(kFull);
  EXPECT_EQ(m.spec.name, "resnet50");
  EXPECT_EQ(m.labels, (Labels{{"project", "vision"}, {"owner", "ana"}}));
  EXPECT_EQ(m.spec.team, "vision");
  EXPECT_EQ(m.spec.priority_class, "high");
  EXPECT_EQ(m.spec.priority, 150);
  EXPECT_EQ(m.spec.workers, 2);
  EXPECT_FALSE(m.spec.preemptible);
  EXPECT_EQ(m.backoff_limit, 5);
  EXPECT_EQ(m.spec.runtime_limit, util::seconds(3600));
  EXPECT_EQ(m.depends_on, (std::vector<std::string>{"prep-data", "42"}));
  EXPECT_TRUE(m.spec.depends_on.empty());
  EXPECT_EQ(m.spec.allowed_gpu_models, std::vector<std::string>{"H100-80GB"});
  EXPECT_EQ(m.spec.node_selector, (Labels{{"zone", "us-east-1a"}}));
  EXPECT_EQ(m.checkpoint.dir, "/ckpt/resnet");
  EXPECT_EQ(m.checkpoint.grace_period, util::seconds(60));
  EXPECT_EQ(m.spec.checkpoint_interval, util::seconds(600));
  EXPECT_EQ(m.process.command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(m.process.args, (std::vector<std::string>{"--epochs", "10"}));
  const std::vector<std::pair<std::string, std::string>> env{
      {"FOO", "bar"}, {"EMPTY", ""}, {"N", "7"}};
  EXPECT_EQ(m.process.env, env);
  EXPECT_EQ(m.process.working_dir, "/home/me/proj");
  EXPECT_EQ(m.spec.worker.gpus, 2);
  EXPECT_EQ(m.spec.worker.cpu, CpuMilli(8000));
  EXPECT_EQ(m.spec.worker.memory, gib(32));
  EXPECT_EQ(m.spec.total_gpus(), 4);
}

TEST(JobManifest, FillsDefaultsForAMinimalSpec) {
  const JobManifest m = parse_ok(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: tiny}\n"
      "spec: {template: {command: [true]}}\n");
  EXPECT_EQ(m.spec.team, "default");
  EXPECT_EQ(m.spec.priority_class, "normal");
  EXPECT_EQ(m.spec.priority, kPriorityNormal);
  EXPECT_EQ(m.spec.workers, 1);
  EXPECT_TRUE(m.spec.preemptible);
  EXPECT_EQ(m.backoff_limit, kDefaultBackoffLimit);
  EXPECT_EQ(m.spec.runtime_limit.count(), 0);
  EXPECT_EQ(m.checkpoint.grace_period, util::seconds(30));
  EXPECT_TRUE(m.checkpoint.dir.empty());
  EXPECT_EQ(m.spec.worker.gpu_share(), GpuMilli(0));
  EXPECT_TRUE(m.process.env.empty());
  EXPECT_TRUE(m.spec.allowed_gpu_models.empty());
}

std::string with_limits(std::string_view limits, std::string_view extra_spec = "") {
  return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: j}\nspec:\n" +
         std::string(extra_spec) + "  template:\n    command: [run]\n    resources:\n" +
         "      limits: " + std::string(limits) + "\n";
}

TEST(JobManifest, PriorityClassSetsPriorityUnlessGivenExplicitly) {
  EXPECT_EQ(parse_ok(with_limits("{}", "  priorityClass: low\n")).spec.priority, kPriorityLow);
  EXPECT_EQ(parse_ok(with_limits("{}", "  priorityClass: high\n")).spec.priority, kPriorityHigh);
  EXPECT_EQ(parse_ok(with_limits("{}", "  priority: 7\n")).spec.priority, 7);
}

TEST(JobManifest, ReadsFractionalGpusAndCpuQuantities) {
  for (const char* half : {"0.5", "\"0.5\"", ".5"}) {
    const JobManifest m = parse_ok(with_limits("{nvidia.com/gpu: " + std::string(half) + "}"));
    EXPECT_EQ(m.spec.worker.gpu_milli, GpuMilli(500)) << half;
    EXPECT_EQ(m.spec.worker.gpus, 0) << half;
  }
  const JobManifest m = parse_ok(with_limits("{nvidia.com/gpu: 0.125, cpu: 500m, memory: 1G}"));
  EXPECT_EQ(m.spec.worker.gpu_milli, GpuMilli(125));
  EXPECT_EQ(m.spec.worker.cpu, CpuMilli(500));
  EXPECT_EQ(m.spec.worker.memory, Bytes(1'000'000'000));
  EXPECT_EQ(parse_ok(with_limits("{nvidia.com/gpu: 16}")).spec.worker.gpus, 16);
}

TEST(JobManifest, ReadsOneMigSliceOnASelectedModel) {
  const JobManifest m = parse_ok(with_limits(
      "{nvidia.com/mig-1g.10gb: 1}", "  nodeSelector: {trainyard.dev/gpu.product: H100-80GB}\n"));
  EXPECT_EQ(m.spec.worker.mig_profile, "1g.10gb");
  EXPECT_EQ(m.spec.worker.gpus, 0);
  EXPECT_EQ(m.spec.allowed_gpu_models, std::vector<std::string>{"H100-80GB"});
}

TEST(JobManifest, AcceptsSeveralGpuModelsAndEnvAsAMapping) {
  const JobManifest m = parse_ok(with_limits(
      "{}", "  nodeSelector: {trainyard.dev/gpu.product: \"A100-80GB, h100,H100-80GB\"}\n"));
  EXPECT_EQ(m.spec.allowed_gpu_models, (std::vector<std::string>{"A100-80GB", "H100-80GB"}));
  const JobManifest e = parse_ok(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: e}\n"
      "spec: {template: {command: [x], env: {ZED: 1, ALPHA: two}}}\n");
  const std::vector<std::pair<std::string, std::string>> in_order{{"ZED", "1"}, {"ALPHA", "two"}};
  EXPECT_EQ(e.process.env, in_order);
}

TEST(JobManifest, ReadsJsonText) {
  const JobManifest m = parse_ok(R"({"apiVersion": "trainyard.dev/v1", "kind": "Job",
    "metadata": {"name": "from-json"},
    "spec": {"workers": 3, "dependsOn": [7, "x"],
             "template": {"command": ["a", "b c"], "resources": {"limits": {"nvidia.com/gpu": 1}}}}})");
  EXPECT_EQ(m.spec.name, "from-json");
  EXPECT_EQ(m.spec.workers, 3);
  EXPECT_EQ(m.depends_on, (std::vector<std::string>{"7", "x"}));
  EXPECT_EQ(m.process.command, (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(m.spec.worker.gpus, 1);
}

void expect_round_trip(const JobManifest& m, const std::string& what) {
  const std::string json = job_manifest_to_json(m);
  auto from_json = parse_job_manifest(json, "x.json");
  ASSERT_TRUE(from_json.is_ok()) << what << ": " << from_json.status().message() << "\n" << json;
  EXPECT_TRUE(*from_json == m) << what << "\n" << json;
  EXPECT_EQ(job_manifest_to_json(*from_json), json) << what;
  const std::string yaml = job_manifest_to_yaml(m);
  auto from_yaml = parse_job_manifest(yaml, "x.yaml");
  ASSERT_TRUE(from_yaml.is_ok()) << what << ": " << from_yaml.status().message() << "\n" << yaml;
  EXPECT_TRUE(*from_yaml == m) << what << "\n" << yaml;
}

TEST(JobManifest, JsonAndYamlWritersRoundTrip) {
  expect_round_trip(parse_ok(kFull), "full");
  // Found by fuzz_job_spec: a command word ending in carriage returns lost one in YAML.
  std::ifstream in(std::string(TY_SOURCE_DIR) +
                   "/fuzz/corpus/fuzz_job_spec/carriage-returns-in-arg.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto cr = parse_job_manifest(text.str(), "cr.yaml");
  ASSERT_TRUE(cr.is_ok()) << cr.status().message();
  expect_round_trip(*cr, "carriage returns");
  expect_round_trip(parse_ok(with_limits("{nvidia.com/gpu: 0.001, cpu: 1500m, memory: 1000}")),
                    "fraction");
  expect_round_trip(parse_ok(with_limits("{nvidia.com/mig-3g.20gb: 1}")), "mig");
  expect_round_trip(parse_ok(with_limits(
                        "{}", "  nodeSelector: {trainyard.dev/gpu.product: \"L4,T4\", a: \"\"}\n")),
                    "models");
  const JobManifest odd = parse_ok(R"(apiVersion: trainyard.dev/v1
kind: Job
metadata: {name: odd}
spec:
  template:
    command: ["~", "null", "", "true", "#x", "a: b", "- y", "multi\nline", "tab\there", "é ✓"]
    args: ["  lead", "trail  ", "\x01", "ends\n", "two\n\n", "\n", "quote\"s'"]
    env: {A: "", B: "{x}", C: "[1]"}
)");
  expect_round_trip(odd, "odd strings");
  // Found by fuzz_job_spec: characters YAML reads as line breaks (NEL, LS, PS) or a BOM, raw in
  // the stored JSON, were folded when the store read it back.
  const JobManifest breaks = parse_ok(R"(apiVersion: trainyard.dev/v1
kind: Job
metadata: {name: breaks}
spec:
  template:
    command: ["a\u0085b", "c\u2028d", "e\u2029f", "g\ufeffh", "\L\P"]
)");
  expect_round_trip(breaks, "YAML line breaks");
  EXPECT_EQ(job_manifest_to_json(breaks).find("\xC2\x85"), std::string::npos);
}

TEST(JobManifest, RefusesStringsThatAreNotUtf8) {
  // yaml-cpp decodes \N and \_ to single Latin-1 bytes; the spec is refused, not mangled.
  for (const char* esc : {"\\N", "\\_"}) {
    auto m = parse_job_manifest(std::string("apiVersion: trainyard.dev/v1\nkind: Job\n"
                                            "metadata: {name: n}\nspec:\n  template:\n"
                                            "    command: [\"a") +
                                    esc + "b\"]\n",
                                "n.yaml");
    ASSERT_FALSE(m.is_ok()) << esc;
    EXPECT_NE(m.status().message().find("n.yaml: a string of the job spec is not valid UTF-8"),
              std::string::npos)
        << m.status().message();
  }
}

TEST(JobManifest, JsonNamesEveryDefaultExplicitly) {
  const std::string json =
      job_manifest_to_json(parse_ok("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: d}\n"
                                    "spec: {template: {command: [x]}}\n"));
  for (const char* field :
       {"\"team\": \"default\"", "\"priorityClass\": \"normal\"", "\"priority\": 100",
        "\"workers\": 1", "\"preemptible\": true", "\"backoffLimit\": 3",
        "\"gracePeriodSeconds\": 30", "\"nvidia.com/gpu\": 0", "\"memory\": \"0Gi\""}) {
    EXPECT_NE(json.find(field), std::string::npos) << field << "\n" << json;
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

TEST(JobManifest, EveryExampleParsesAndRoundTrips) {
  const std::filesystem::path dir = std::filesystem::path(TY_SOURCE_DIR) / "examples" / "jobs";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    auto m = parse_job_manifest(read_file(entry.path()), entry.path().filename().string());
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    expect_round_trip(*m, entry.path().filename().string());
  }
  EXPECT_GE(count, 8);
}

// The examples' `sh -c` scripts must be valid POSIX sh (dash on Debian).
TEST(JobManifest, ExampleShellScriptsAreValidSh) {
  if (std::system("command -v sh >/dev/null 2>&1") != 0) GTEST_SKIP() << "no sh";
  const std::filesystem::path dir = std::filesystem::path(TY_SOURCE_DIR) / "examples" / "jobs";
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("ty_job_script_" + std::to_string(::getpid()));
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    auto m = parse_job_manifest(read_file(entry.path()), "x");
    ASSERT_TRUE(m.is_ok());
    const auto& cmd = m->process.command;
    if (cmd.size() != 3 || cmd[0] != "sh" || cmd[1] != "-c") continue;
    std::ofstream(tmp) << cmd[2];
    EXPECT_EQ(std::system(("sh -n " + tmp.string()).c_str()), 0) << entry.path();
  }
  std::filesystem::remove(tmp);
}

}  // namespace
}  // namespace trainyard::model
