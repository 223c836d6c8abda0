// Invalid job manifests: each class of mistake gives "<file>:<line>:<column>: <what and the fix>"
// at the right place, and no input crashes or throws.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "model/job_manifest.h"

namespace trainyard::model {
namespace {

// Line numbers below refer to this document.
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

std::string error_of(std::string_view text) {
  auto m = parse_job_manifest(text, "job.yaml");
  EXPECT_FALSE(m.is_ok()) << text;
  if (m.is_ok()) return "";
  EXPECT_EQ(m.status().code(), util::StatusCode::InvalidArgument);
  return m.status().message();
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(JobManifestErrors, BaseDocumentIsValid) {
  EXPECT_TRUE(parse_job_manifest(kBase, "job.yaml").is_ok());
}

TEST(JobManifestErrors, ElasticRangeAroundWorkersRoundTrips) {
  auto m = parse_job_manifest(
      with_line(6, "  workers: 2\n  elastic: {minWorkers: 1, maxWorkers: 8}"), "job.yaml");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->spec.min_workers, 1);
  EXPECT_EQ(m->spec.max_workers, 8);
  EXPECT_TRUE(m->spec.elastic());
  auto back = parse_job_manifest(job_manifest_to_json(*m), "job.json");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->spec, m->spec);
  // minWorkers defaults to 1; a rigid job has no range.
  auto d = parse_job_manifest(with_line(6, "  workers: 2\n  elastic: {maxWorkers: 4}"), "job.yaml");
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d->spec.min_workers, 1);
  EXPECT_FALSE(parse_job_manifest(kBase, "job.yaml")->spec.elastic());
}

TEST(JobManifestErrors, ElasticRangeMustHoldWorkers) {
  EXPECT_CONTAINS(error_of(with_line(6, "  workers: 4\n  elastic: {minWorkers: 1, maxWorkers: 2}")),
                  "job.yaml:7:40: spec.elastic.maxWorkers");
  EXPECT_CONTAINS(error_of(with_line(6, "  workers: 2\n  elastic: {minWorkers: 3, maxWorkers: 8}")),
                  "job.yaml:7:25: spec.elastic.minWorkers");
  EXPECT_CONTAINS(error_of(with_line(6, "  workers: 2\n  elastic: {minWorkers: 1}")),
                  "spec.elastic.maxWorkers is required");
  EXPECT_CONTAINS(error_of(with_line(6, "  workers: 2\n  elastic: {maxWorkers: 4, max: 9}")),
                  "unknown field \"spec.elastic.max\"");
}

TEST(JobManifestErrors, UnknownFieldNamesItSuggestsAndListsAllowed) {
  EXPECT_EQ(
      error_of(with_line(6, "  worker: 2")),
      "job.yaml:6:3: unknown field \"spec.worker\" (did you mean \"workers\"?; allowed: team, "
      "priorityClass, priority, workers, preemptible, backoffLimit, activeDeadlineSeconds, "
      "dependsOn, nodeSelector, checkpoint, template, array, elastic)");
  EXPECT_EQ(error_of(with_line(4, "  name: a\n  colour: red")),
            "job.yaml:5:3: unknown field \"metadata.colour\" (allowed: name, labels)");
  EXPECT_CONTAINS(error_of(with_line(11, "        nvidia.com/gpus: 2")),
                  "job.yaml:11:9: unknown field \"spec.template.resources.limits.nvidia.com/gpus\" "
                  "(did you mean \"nvidia.com/gpu\"?;");
  // A prefixed key written without its prefix points to the prefixed one, not to "cpu".
  EXPECT_CONTAINS(error_of(with_line(11, "        gpu: 2")),
                  "job.yaml:11:9: unknown field \"spec.template.resources.limits.gpu\" "
                  "(did you mean \"nvidia.com/gpu\"?;");
  EXPECT_EQ(error_of(with_line(6, "  workers: 2\n  workers: 3")),
            "job.yaml:7:3: field \"spec.workers\" is given twice (first on line 6)");
}

TEST(JobManifestErrors, WrongTypesSayWhatIsExpectedAndWhatWasGiven) {
  EXPECT_EQ(
      error_of(with_line(11, "        nvidia.com/gpu: two")),
      "job.yaml:11:25: spec.template.resources.limits.nvidia.com/gpu must be a whole number of "
      "GPUs from 0 to 16 or a fraction of one GPU such as 0.5, got \"two\"");
  EXPECT_EQ(error_of(with_line(6, "  workers: many")),
            "job.yaml:6:12: spec.workers must be a whole number from 1 to 1024, got \"many\"");
  EXPECT_EQ(error_of(with_line(6, "  workers: [1]")),
            "job.yaml:6:12: spec.workers must be a whole number from 1 to 1024, got a list");
  EXPECT_EQ(error_of(with_line(6, "  preemptible: yes")),
            "job.yaml:6:16: spec.preemptible must be true or false, got \"yes\"");
  EXPECT_EQ(
      error_of(with_line(8, "    command: python train.py")),
      "job.yaml:8:14: spec.template.command must be a list, got \"python train.py\" (write it "
      "as a list: [python, train.py])");
  EXPECT_EQ(error_of(with_line(8, "    command: [python, {a: 1}]")),
            "job.yaml:8:23: spec.template.command[1] must be a string, got a mapping");
  EXPECT_EQ(error_of("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\nspec: [1]\n"),
            "job.yaml:4:7: spec must be a mapping of name: value, got a list");
  EXPECT_CONTAINS(error_of(with_line(4, "  name: My_Job")),
                  "job.yaml:4:9: metadata.name must be a job name: lowercase letters");
  EXPECT_CONTAINS(error_of(with_line(4, "  name: \"42\"")),
                  "job.yaml:4:9: metadata.name must be a name with at least one letter");
  EXPECT_CONTAINS(
      error_of(with_line(6, "  priorityClass: urgent")),
      "job.yaml:6:18: spec.priorityClass must be one of low, normal, high, got \"urgent\"");
}

TEST(JobManifestErrors, MissingRequiredFieldsPointAtTheParent) {
  EXPECT_EQ(error_of(with_line(4, "  labels: {a: b}")),
            "job.yaml:3:1: metadata.name is required (add name: <job name> under metadata)");
  EXPECT_EQ(error_of(with_line(8, "    args: [x]")),
            "job.yaml:7:3: spec.template.command is required (add command: [<program>, <arg>])");
  EXPECT_EQ(error_of("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\n"),
            "job.yaml:1:1: spec is required (add spec: {template: {command: [<program>, <arg>]}})");
  EXPECT_EQ(error_of(with_line(8, "    command: [x]\n    env: [{value: x}]")),
            "job.yaml:9:11: spec.template.env[0].name is required (add name: <VARIABLE>)");
}

TEST(JobManifestErrors, ApiVersionAndKindSayWhatToWrite) {
  EXPECT_EQ(
      error_of(with_line(1, "apiVersion: batch/v1")),
      "job.yaml:1:13: apiVersion must be trainyard.dev/v1, got \"batch/v1\" (write apiVersion: "
      "trainyard.dev/v1)");
  EXPECT_EQ(error_of(with_line(2, "kind: Pod")),
            "job.yaml:2:7: kind must be Job, got \"Pod\" (write kind: Job)");
  EXPECT_EQ(error_of(with_line(1, "")),
            "job.yaml:2:1: apiVersion is required (write apiVersion: trainyard.dev/v1)");
}

TEST(JobManifestErrors, DocumentProblemsAreLocatedNeverThrown) {
  const std::string empty =
      "job.yaml:1:1: the document is empty (a job starts with apiVersion: trainyard.dev/v1 and "
      "kind: Job)";
  EXPECT_EQ(error_of(""), empty);
  EXPECT_EQ(error_of("# nothing here\n"), empty);
  EXPECT_EQ(error_of("- a\n- b\n"),
            "job.yaml:1:1: a job must be a mapping with apiVersion, kind, metadata and spec, got a "
            "list");
  EXPECT_CONTAINS(error_of("apiVersion: trainyard.dev/v1\nkind: [Job\nmetadata: x\n"),
                  "job.yaml:3:9: not valid YAML: ");
  EXPECT_CONTAINS(error_of(std::string(kBase) + "---\n" + std::string(kBase)),
                  "job.yaml:12:1: one job per document");
  EXPECT_EQ(error_of("\"\","), "job.yaml:1:3: not valid YAML: unexpected ','");
  EXPECT_TRUE(parse_job_manifest(std::string(kBase) + "---\n", "job.yaml").is_ok());
  EXPECT_EQ(error_of(with_line(4, "  name: \xff")), "job.yaml:4:9: the text is not valid UTF-8");
  EXPECT_EQ(error_of(with_line(4, std::string("  name: a\0b", 11))),
            "job.yaml:4:10: the text contains a NUL byte");
  EXPECT_CONTAINS(error_of(with_line(8, "    command: &a [*a]")),
                  "job.yaml:8:14: spec.template.command[0] must be a string, got a list");
  EXPECT_CONTAINS(error_of(std::string(2 << 20, ' ')), "at most 1048576 are accepted");
  EXPECT_CONTAINS(error_of(std::string(10000, '[')), "job.yaml:");
}

TEST(JobManifestErrors, ImpossibleRequestsAreRefusedWithAFix) {
  EXPECT_EQ(
      error_of(with_line(11, "        nvidia.com/gpu: 32")),
      "job.yaml:11:25: spec.template.resources.limits.nvidia.com/gpu must be a whole number of "
      "GPUs from 0 to 16 or a fraction of one GPU such as 0.5, got \"32\" (a worker runs on "
      "one node, which has at most 16 GPUs; ask for more workers instead, e.g. workers: 4 "
      "with nvidia.com/gpu: 8)");
  EXPECT_CONTAINS(error_of(with_line(11, "        nvidia.com/gpu: 1.5")),
                  "got \"1.5\" (a fraction");
  EXPECT_CONTAINS(error_of(with_line(11, "        nvidia.com/gpu: -1")), "job.yaml:11:");
  EXPECT_CONTAINS(error_of(with_line(11, "        nvidia.com/gpu: 0.0001")), "steps of 0.001");
  EXPECT_EQ(error_of(with_line(6, "  workers: 0")),
            "job.yaml:6:12: spec.workers must be a whole number from 1 to 1024, got \"0\"");
  EXPECT_EQ(error_of(with_line(11, "        nvidia.com/gpu: 1\n        nvidia.com/mig-1g.10gb: 1")),
            "job.yaml:11:9: spec.template.resources.limits: nvidia.com/gpu and "
            "nvidia.com/mig-1g.10gb cannot be combined (ask for one MIG instance or for GPUs, not "
            "both)");
  EXPECT_CONTAINS(
      error_of(with_line(11, "        nvidia.com/mig-1g.10gb: 2")),
      "job.yaml:11:33: spec.template.resources.limits.nvidia.com/mig-1g.10gb must be 1, "
      "got \"2\" (a worker gets one MIG instance;");
  EXPECT_CONTAINS(error_of(with_line(11, "        nvidia.com/mig-9g.99gb: 1")),
                  "unknown MIG profile \"9g.99gb\" (known profiles: 1g.10gb,");
  EXPECT_CONTAINS(error_of(with_line(6, "  nodeSelector: {trainyard.dev/gpu.product: T4}") +
                           "        nvidia.com/mig-1g.10gb: 1\n"),
                  "the selected GPU models do not offer MIG profile \"1g.10gb\" (T4 offers: none)");
  EXPECT_EQ(
      error_of(with_line(11, "        cpu: -1")),
      "job.yaml:11:14: spec.template.resources.limits.cpu must be cores (8, 2.5) or milli-cores "
      "(500m), got \"-1\"");
  EXPECT_CONTAINS(error_of(with_line(11, "        memory: lots")),
                  "limits.memory must be bytes with an optional suffix");
  EXPECT_EQ(
      error_of(with_line(6, "  checkpoint: {gracePeriodSeconds: 7200}")),
      "job.yaml:6:36: spec.checkpoint.gracePeriodSeconds must be a whole number from 0 to 3600, "
      "got \"7200\" (a job gets at most an hour between notice and SIGKILL)");
  EXPECT_CONTAINS(error_of(with_line(6, "  backoffLimit: -1")),
                  "spec.backoffLimit must be a whole number from 0 to 100, got \"-1\"");
  EXPECT_CONTAINS(error_of(with_line(6, "  checkpoint: {dir: ckpt}")),
                  "spec.checkpoint.dir must be an absolute path (starting with /), got \"ckpt\"");
}

TEST(JobManifestErrors, GpuModelsMustBeKnown) {
  const std::string msg =
      error_of(with_line(6, "  nodeSelector: {trainyard.dev/gpu.product: H900}"));
  EXPECT_CONTAINS(msg,
                  "job.yaml:6:45: spec.nodeSelector.trainyard.dev/gpu.product must be GPU model "
                  "names such as H100-80GB, separated by commas, got \"H900\" (known models: "
                  "H100-80GB, H200-141GB,");
  EXPECT_CONTAINS(error_of(with_line(6, "  nodeSelector: {\"bad key!\": x}")),
                  "job.yaml:6:18: spec.nodeSelector: \"bad key!\" is not a valid label key");
}

TEST(JobManifestErrors, EnvironmentNamesAreCheckedAndReservedOnesRefused) {
  EXPECT_EQ(error_of(with_line(8,
                               "    command: [x]\n    env: [{name: CUDA_VISIBLE_DEVICES, "
                               "value: \"0\"}]")),
            "job.yaml:9:18: spec.template.env[0].name must be a variable trainyard does not set "
            "itself, got \"CUDA_VISIBLE_DEVICES\" (trainyard sets TRAINYARD_* (except the "
            "SDK's TRAINYARD_TUNE_*), CUDA_VISIBLE_DEVICES, WORLD_SIZE, RANK, LOCAL_RANK, "
            "MASTER_ADDR and MASTER_PORT for each worker)");
  // trainyard.tune's pinned plan (its probe prints these lines for template.env).
  const auto tuned = parse_job_manifest(
      with_line(8, "    command: [x]\n    env: {TRAINYARD_TUNE_MICRO_BATCH: 16}"), "job.yaml");
  EXPECT_TRUE(tuned.is_ok()) << tuned.status().to_string();
  EXPECT_CONTAINS(error_of(with_line(8, "    command: [x]\n    env: {TRAINYARD_JOB_ID: 1}")),
                  "job.yaml:9:11: spec.template.env.TRAINYARD_JOB_ID must be a variable trainyard");
  EXPECT_EQ(error_of(with_line(8, "    command: [x]\n    env: {1ABC: x}")),
            "job.yaml:9:11: spec.template.env: \"1ABC\" is not an environment variable name "
            "([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_CONTAINS(error_of(with_line(8, "    command: [x]\n    env: [{name: \"1ABC\"}]")),
                  "spec.template.env[0].name must be an environment variable name "
                  "([A-Za-z_][A-Za-z0-9_]*), got \"1ABC\"");
  EXPECT_EQ(error_of(with_line(8, "    command: [x]\n    env: [{name: A}, {name: A}]")),
            "job.yaml:9:29: spec.template.env[1].name: environment variable A is set twice");
  EXPECT_CONTAINS(error_of(with_line(8, "    command: [x]\n    env: x=1")),
                  "spec.template.env must be a list of {name: NAME, value: text} or a mapping");
}

TEST(JobManifestErrors, DependenciesMustNameOtherJobs) {
  EXPECT_EQ(error_of(with_line(6, "  dependsOn: [resnet50]")),
            "job.yaml:6:15: spec.dependsOn[0] must be another job than this one, got \"resnet50\"");
  EXPECT_EQ(
      error_of(with_line(6, "  dependsOn: prep")),
      "job.yaml:6:14: spec.dependsOn must be a list, got \"prep\" (write it as a list: [prep])");
  EXPECT_CONTAINS(error_of(with_line(6, "  dependsOn: [\"Not A Name\"]")),
                  "spec.dependsOn[0] must be a job name or a numeric job id");
  EXPECT_EQ(error_of(with_line(6, "  dependsOn: [a, a]")),
            "job.yaml:6:18: spec.dependsOn[1]: \"a\" is listed twice");
}

TEST(LocateSpecError, PutsTheFieldsLineInFrontAndLeavesOthersAlone) {
  const auto located = [](std::string_view message) {
    return locate_spec_error(util::invalid_argument(std::string(message)), kBase, "job.yaml")
        .message();
  };
  EXPECT_EQ(located("spec.workers: too many"), "job.yaml:6: spec.workers: too many");
  EXPECT_EQ(located("spec.template.resources.limits.nvidia.com/gpu: no node has 2"),
            "job.yaml:11: spec.template.resources.limits.nvidia.com/gpu: no node has 2");
  EXPECT_EQ(located("spec.template.command[1]: bad"), "job.yaml:8: spec.template.command[1]: bad");
  // A field the text lacks: its nearest ancestor's line.
  EXPECT_EQ(located("spec.team: not yours"), "job.yaml:5: spec.team: not yours");
  // Located already, or about no field: unchanged.
  EXPECT_EQ(located("job.yaml:3: spec.workers: x"), "job.yaml:3: spec.workers: x");
  EXPECT_EQ(located("the server is busy"), "the server is busy");
  EXPECT_TRUE(locate_spec_error(util::Status::ok(), kBase, "job.yaml").is_ok());
  // Text that does not parse: unchanged, no throw.
  EXPECT_EQ(locate_spec_error(util::invalid_argument("spec.workers: x"), "a: [", "f").message(),
            "spec.workers: x");
}

}  // namespace
}  // namespace trainyard::model
