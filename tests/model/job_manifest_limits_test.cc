// The rules that keep an accepted spec storable and runnable: team names as everywhere else,
// plain-decimal quantities, execve's size limits on command, args and env, known simulated-GPU
// profiles, and a stored form that is read back even when it is longer than a request may be.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/cluster_config.h"
#include "model/job_manifest.h"
#include "model/names.h"
#include "model/quantity.h"
#include "model/sim_gpu_profile.h"

namespace trainyard::model {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr size_t kMaxArg = 131071;  // Linux's MAX_ARG_STRLEN less the NUL

// A job whose spec holds `spec_lines` (indented two spaces) and `template_lines` (four).
std::string job(std::string_view spec_lines = "", std::string_view template_lines = "",
                std::string_view metadata_lines = "") {
  return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata:\n  name: lim\n" +
         std::string(metadata_lines) + "spec:\n" + std::string(spec_lines) +
         "  template:\n    command: [train]\n" + std::string(template_lines);
}

std::string with_gpus(std::string_view value) {
  return job("",
             "    resources:\n      limits:\n        nvidia.com/gpu: " + std::string(value) + "\n");
}

std::string error_of(std::string_view text) {
  auto m = parse_job_manifest(text, "job.yaml");
  EXPECT_FALSE(m.is_ok()) << text.substr(0, 300);
  return m.is_ok() ? "" : m.status().message();
}

JobManifest parse_ok(std::string_view text) {
  auto m = parse_job_manifest(text, "job.yaml");
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m.is_ok() ? *m : JobManifest{};
}

TEST(JobManifestLimits, TeamNamesFollowTheOneRule) {
  for (const char* ok : {"vision", "ML_team.v2", "9lives", "a", "Team-1"}) {
    EXPECT_EQ(parse_ok(job(fmt::format("  team: {}\n", ok))).spec.team, ok);
    EXPECT_TRUE(check_team_name(ok).is_ok()) << ok;
  }
  const std::string rule =
      "spec.team must be a team name: 1 to 63 letters, digits, \"-\", \"_\" or \".\", starting "
      "with a letter or digit";
  for (const std::string& bad : std::vector<std::string>{
           "\"a b\"", "\"\"", "ml/vision", "-x", "_x", ".x", "équipe", "\"tab\\there\"", "a:b",
           std::string(64, 'a'), "\"\\x01\"", "\"a\\u2028b\""}) {
    EXPECT_CONTAINS(error_of(job("  team: " + bad + "\n")), "job.yaml:6:9: " + rule) << bad;
  }
  EXPECT_TRUE(parse_job_manifest(job("  team: " + std::string(63, 'a') + "\n"), "j").is_ok());
}

TEST(JobManifestLimits, ClusterTeamsFollowTheSameRule) {
  auto teams = [](std::string_view name) {
    return parse_cluster_yaml(fmt::format("teams:\n  - name: {}\n", name), "c.yaml",
                              {.require_nodes = false});
  };
  EXPECT_TRUE(teams("ML_team.v2").is_ok());
  for (const std::string& bad :
       std::vector<std::string>{"\"a b\"", "ml/vision", "-x", "\"\"", std::string(64, 'a')}) {
    auto c = teams(bad);
    ASSERT_FALSE(c.is_ok()) << bad;
    EXPECT_CONTAINS(c.status().message(), "c.yaml:2:11: ");
    EXPECT_CONTAINS(c.status().message(), "is not a team name: use 1 to 63 letters");
  }
}

TEST(JobManifestLimits, GpuCountsArePlainDecimals) {
  EXPECT_EQ(parse_ok(with_gpus("1.0")).spec.worker.gpus, 1);
  EXPECT_EQ(parse_ok(with_gpus("\"2\"")).spec.worker.gpus, 2);
  EXPECT_EQ(parse_ok(with_gpus("0.500")).spec.worker.gpu_milli.value(), 500);
  EXPECT_EQ(parse_ok(with_gpus("16.000")).spec.worker.gpus, 16);
  EXPECT_EQ(parse_ok(with_gpus("0")).spec.worker.gpus, 0);
  const std::string want =
      "spec.template.resources.limits.nvidia.com/gpu must be a whole number of GPUs from 0 to 16 "
      "or a fraction of one GPU such as 0.5, got ";
  const std::string fix =
      " (write plain decimal digits such as 2 or 0.5: no sign, exponent, hex or spaces)";
  for (const std::string& bad : std::vector<std::string>{
           "-0", "+1", "1e0", "0x1", "\" 1\"", "\"1 \"", "1.", "-0.5", "1_0", "0b1", "1e-3"}) {
    const std::string msg = error_of(with_gpus(bad));
    EXPECT_CONTAINS(msg, "job.yaml:10:25: " + want) << bad;
    EXPECT_CONTAINS(msg, fix) << bad;
  }
  for (const std::string& bad : std::vector<std::string>{".", "inf", ".inf", "nan", ".nan", "two",
                                                         "\"\"", "~", "\"\\u0661\"", "\"１\""})
    EXPECT_CONTAINS(error_of(with_gpus(bad)), "job.yaml:10:25: " + want) << bad;
  EXPECT_CONTAINS(error_of(with_gpus("99999999999999999999999")), "at most 16 GPUs");
  EXPECT_CONTAINS(error_of(with_gpus("16.001")), "at most 16 GPUs");
  EXPECT_CONTAINS(error_of(with_gpus("0.0005")), "steps of 0.001");
  EXPECT_CONTAINS(error_of(with_gpus("0.5000001")), "steps of 0.001");
}

TEST(JobManifestLimits, CpuAndMemoryArePlainToo) {
  EXPECT_EQ(parse_cpu("2")->value(), 2000);
  EXPECT_EQ(parse_cpu("0.5")->value(), 500);
  EXPECT_EQ(parse_cpu(".5")->value(), 500);
  EXPECT_EQ(parse_cpu("2.250")->value(), 2250);
  EXPECT_EQ(parse_cpu("250m")->value(), 250);
  EXPECT_EQ(parse_cpu("0")->value(), 0);
  for (const char* bad :
       {"1e3", "-0", "+1", "inf", "nan", " 1", "1 ", "0x10", "-0m", "+5m", "1.5m", "1e3m", "", "m",
        ".", "1.", "0.0001", "1000000000000", "1000000000000000m"}) {
    EXPECT_FALSE(parse_cpu(bad).is_ok()) << bad;
  }
  EXPECT_EQ(parse_bytes("32Gi")->value(), int64_t{32} << 30);
  EXPECT_EQ(parse_bytes("0")->value(), 0);
  for (const char* bad : {"-0", "+1Gi", "1e3", "0x10", " 1Gi", "1.5Gi", "Gi", "-0Gi", "1 Gi",
                          "99999999999999999999"}) {
    EXPECT_FALSE(parse_bytes(bad).is_ok()) << bad;
  }
  const PlainDecimal huge = parse_plain_decimal(std::string(40, '9'));
  EXPECT_TRUE(huge.ok);
  EXPECT_EQ(huge.milli, kMaxPlainMilli);
  EXPECT_CONTAINS(error_of(job("", "    resources: {limits: {cpu: 1e3}}\n")),
                  "job.yaml:8:31: spec.template.resources.limits.cpu must be cores");
  EXPECT_CONTAINS(error_of(job("", "    resources: {limits: {memory: \"-0\"}}\n")),
                  "job.yaml:8:34: spec.template.resources.limits.memory must be bytes");
}

TEST(JobManifestLimits, ArgumentsLongerThanExecveTakesAreRefusedWhereWritten) {
  // At the limit: accepted.
  EXPECT_TRUE(
      parse_job_manifest(job("", "    args: [\"" + std::string(kMaxArg, 'a') + "\"]\n"), "j")
          .is_ok());
  const std::string msg =
      error_of(job("", "    args: [x, \"" + std::string(kMaxArg + 1, 'a') + "\"]\n"));
  EXPECT_CONTAINS(msg,
                  "job.yaml:8:15: spec.template.args[1] must be an argument of at most 131071 "
                  "bytes, got \"aaaa");
  EXPECT_CONTAINS(msg,
                  "(it has 131072 bytes; Linux refuses longer ones (MAX_ARG_STRLEN, 131072 "
                  "bytes with the NUL); pass large data in a file");
  const std::string in_command = error_of(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: c}\nspec:\n  template:\n"
      "    command:\n      - sh\n      - \"" +
      std::string(200000, 'b') + "\"\n");
  EXPECT_CONTAINS(in_command,
                  "job.yaml:8:9: spec.template.command[1] must be an argument of at "
                  "most 131071 bytes");
}

TEST(JobManifestLimits, EnvironmentEntriesAreCountedAsNameEqualsValue) {
  // "NAME=value" and its NUL must fit in 131072 bytes.
  const std::string fits(kMaxArg - 4, 'v');  // "ABC=" + value = 131071
  EXPECT_TRUE(parse_job_manifest(job("", "    env: [{name: ABC, value: \"" + fits + "\"}]\n"), "j")
                  .is_ok());
  EXPECT_CONTAINS(
      error_of(job("", "    env: [{name: ABC, value: \"" + fits + "v\"}]\n")),
      "job.yaml:8:30: spec.template.env[0].value must be a variable whose NAME=value has "
      "at most 131071 bytes, got \"vvv");
  EXPECT_CONTAINS(error_of(job("", "    env: {ABC: \"" + fits + "v\"}\n")),
                  "job.yaml:8:16: spec.template.env.ABC must be a variable whose NAME=value has at "
                  "most 131071 bytes");
  EXPECT_CONTAINS(error_of(job("", "    env: [{name: " + std::string(kMaxArg, 'N') + "}]\n")),
                  "spec.template.env[0].name must be a variable whose");
}

TEST(JobManifestLimits, TheTotalOfArgsAndEnvStaysUnderASafeExecveSize) {
  // Seven arguments of 128 KiB and many short ones are fine one by one, not together.
  std::string args = "    args: [";
  for (int i = 0; i < 7; ++i) args += "\"" + std::string(kMaxArg, 'a') + "\", ";
  for (int i = 0; i < 13200; ++i) args += "x, ";
  args += "]\n";
  const size_t execve_bytes = (5 + 1 + 8) + 7 * (kMaxArg + 1 + 8) + 13200 * (1 + 1 + 8);
  const std::string msg = error_of(job("", args));
  EXPECT_CONTAINS(msg, fmt::format("job.yaml:7:5: spec.template: command, args and env take {} "
                                   "bytes in execve (each string, its NUL and its 8-byte "
                                   "pointer); at most 1048576 are accepted",
                                   execve_bytes));
  // Many small variables count their pointers too.
  std::string env = "    env: {";
  for (int i = 0; i < 70000; ++i) env += fmt::format("V{}: x, ", i);
  env += "}\n";
  EXPECT_CONTAINS(error_of(job("", env)), "spec.template: command, args and env take");
  // A stored spec is read whatever its sizes: it was accepted before these rules.
  JobManifest big;
  big.spec.name = "big";
  big.spec.team = "default";
  big.process.command = {"train"};
  for (int i = 0; i < 9; ++i) big.process.args.push_back(std::string(kMaxArg + 10, 'a'));
  auto stored = parse_stored_job_manifest(job_manifest_to_json(big), "store");
  ASSERT_TRUE(stored.is_ok()) << stored.status().message();
  EXPECT_EQ(*stored, big);
}

TEST(JobManifestLimits, DirectoriesFitInPathMax) {
  const std::string longest = "/" + std::string(4094, 'd');
  EXPECT_EQ(parse_ok(job("", "    workingDir: " + longest + "\n")).process.working_dir, longest);
  EXPECT_EQ(parse_ok(job("  checkpoint: {dir: " + longest + "}\n")).checkpoint.dir, longest);
  EXPECT_CONTAINS(error_of(job("", "    workingDir: " + longest + "d\n")),
                  "job.yaml:8:17: spec.template.workingDir must be a path of at most 4095 bytes");
  EXPECT_CONTAINS(error_of(job("  checkpoint: {dir: " + longest + "d}\n")),
                  "job.yaml:6:21: spec.checkpoint.dir must be a path of at most 4095 bytes");
}

TEST(JobManifestLimits, SimulatedGpuProfilesMustBeKnown) {
  for (std::string_view p : kSimGpuProfiles) {
    const JobManifest m =
        parse_ok(job("", "", fmt::format("  labels: {{trainyard.dev/sim-gpu-profile: {}}}\n", p)));
    EXPECT_EQ(m.labels.at(std::string(kLabelSimGpuProfile)), p);
  }
  const std::string bad = job("", "", "  labels: {trainyard.dev/sim-gpu-profile: overheated}\n");
  EXPECT_EQ(error_of(bad),
            "job.yaml:5:43: metadata.labels.trainyard.dev/sim-gpu-profile must be one of healthy, "
            "data-bound, memory-leak, overheating, underfilled, idle, fp32, got \"overheated\" "
            "(the load simulated GPUs show for this job; leave the label out for healthy)");
  EXPECT_CONTAINS(error_of(job("", "", "  labels: {trainyard.dev/sim-gpu-profile: \"\"}\n")),
                  "got \"\"");
  // Stored before the rule: still readable (telemetry treats an unknown profile as healthy).
  JobManifest old = parse_ok(job());
  old.labels[std::string(kLabelSimGpuProfile)] = "overheated";
  auto stored = parse_stored_job_manifest(job_manifest_to_json(old), "store");
  ASSERT_TRUE(stored.is_ok()) << stored.status().message();
  EXPECT_EQ(*stored, old);
}

TEST(JobManifestLimits, StoredFormLongerThanARequestIsReadBack) {
  // ~900 KB of backslashes: under the 1 MiB request limit, but JSON escaping doubles them.
  std::string args = "    args:\n";
  for (int i = 0; i < 7; ++i) args += "      - '" + std::string(kMaxArg - 100, '\\') + "'\n";
  const std::string spec = job("", args);
  ASSERT_LT(spec.size(), size_t{1} << 20);
  const JobManifest m = parse_ok(spec);
  const std::string json = job_manifest_to_json(m);
  EXPECT_GT(json.size(), size_t{1} << 20);
  EXPECT_CONTAINS(parse_job_manifest(json, "store").status().message(),
                  "at most 1048576 are accepted");
  auto back = parse_stored_job_manifest(json, "store");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(*back, m);
  // The stored form has a bound of its own.
  EXPECT_CONTAINS(parse_stored_job_manifest(std::string((size_t{16} << 20) + 1, ' '), "store")
                      .status()
                      .message(),
                  "store: the document has 16777217 bytes; at most 16777216 are "
                  "accepted");
}

TEST(JobManifestLimits, StoredTeamsOfTheOldRuleAreStillRead) {
  JobManifest m = parse_ok(job());
  m.spec.team = "ml/vision";  // accepted before team names had one rule
  const std::string json = job_manifest_to_json(m);
  EXPECT_CONTAINS(parse_job_manifest(json, "x").status().message(), "spec.team must be a team");
  auto stored = parse_stored_job_manifest(json, "store");
  ASSERT_TRUE(stored.is_ok()) << stored.status().message();
  EXPECT_EQ(stored->spec.team, "ml/vision");
  m.spec.team = "a b";  // never accepted
  EXPECT_FALSE(parse_stored_job_manifest(job_manifest_to_json(m), "store").is_ok());
}

}  // namespace
}  // namespace trainyard::model
