#include "model/job_manifest.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "model/accelerator.h"
#include "model/internal/manifest_reader.h"
#include "model/job_array.h"
#include "model/names.h"
#include "model/sim_gpu_profile.h"

namespace trainyard::model {
namespace {

using internal::Field;
using internal::Fields;
using internal::kMaxPathBytes;
using internal::ManifestReader;
using internal::ManifestSource;

// The canonical JSON of an accepted spec can be longer than the spec: JSON escaping turns one
// byte into up to six (\u001f), and short YAML entries ({A, B}) become indented objects. With
// the execve limits on command, args and env it stays under about 7 MiB; kStoredYamlLimits'
// 16 MiB leaves room and still refuses a store row that is garbage.
constexpr size_t kMaxStoredManifestBytes = kStoredYamlLimits.max_document_bytes;
constexpr std::string_view kApiVersion = "trainyard.dev/v1";
constexpr int64_t kMaxWorkers = 1024;
constexpr int64_t kMaxBackoffLimit = 100;
constexpr int64_t kMaxPriority = 1'000'000'000;  // Kubernetes' ceiling for user priorities
constexpr int64_t kMaxSeconds = int64_t{10} * 365 * 24 * 3600;
constexpr int64_t kMaxGraceSeconds = 3600;

const Field* find(const Fields& fields, std::string_view name) {
  auto it = fields.find(name);
  return it == fields.end() ? nullptr : &it->second;
}

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// What a team name had to be before check_team_name(): non-empty, at most 63 bytes, no spaces
// or control characters. Stored specs of that time are still read.
bool is_legacy_team_name(std::string_view s) {
  return !s.empty() && s.size() <= kMaxNameLength && std::none_of(s.begin(), s.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) ||
           std::iscntrl(static_cast<unsigned char>(c));
  });
}

// Numeric job ids start at 1 and fit in int64.
bool is_job_id(std::string_view s) {
  if (!is_digits(s) || s.size() > 18) return false;
  return std::any_of(s.begin(), s.end(), [](char c) { return c != '0'; });
}

std::string known_models() {
  std::string out;
  for (const Accelerator& a : accelerator_catalog())
    out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

class ManifestParser {
 public:
  ManifestParser(std::string file, ManifestSource source, const YamlLimits& limits)
      : r_(std::move(file), limits), source_(source) {}

  util::Result<JobManifest> parse(const Field& root) {
    if (!root.value.IsMap()) {
      return r_.error(root, fmt::format("a job must be a mapping with apiVersion, kind, metadata "
                                        "and spec, got {}",
                                        describe_yaml(root.value)));
    }
    TY_ASSIGN_OR_RETURN(Fields top, r_.fields(root, {"apiVersion", "kind", "metadata", "spec"}));
    TY_RETURN_IF_ERROR(constant(root, top, "apiVersion", kApiVersion));
    TY_RETURN_IF_ERROR(constant(root, top, "kind", "Job"));
    JobManifest m;
    const Field* meta = find(top, "metadata");
    if (meta == nullptr) return r_.missing(root, "metadata", "add metadata: {name: <job name>}");
    TY_RETURN_IF_ERROR(metadata(*meta, m));
    const Field* spec = find(top, "spec");
    if (spec == nullptr)
      return r_.missing(root, "spec", "add spec: {template: {command: [<program>, <arg>]}}");
    TY_RETURN_IF_ERROR(job_spec(*spec, m));
    return m;
  }

 private:
  util::Status constant(const Field& root, const Fields& top, std::string_view name,
                        std::string_view want) const {
    const std::string fix = fmt::format("write {}: {}", name, want);
    const Field* f = find(top, name);
    if (f == nullptr) return r_.missing(root, name, fix);
    if (!f->value.IsScalar() || f->value.Scalar() != want) return r_.invalid(*f, want, fix);
    return util::Status::ok();
  }

  util::Status metadata(const Field& meta, JobManifest& m) const {
    TY_ASSIGN_OR_RETURN(Fields f, r_.fields(meta, {"name", "labels"}));
    const Field* name = find(f, "name");
    if (name == nullptr) return r_.missing(meta, "name", "add name: <job name> under metadata");
    TY_ASSIGN_OR_RETURN(m.spec.name, r_.string(*name));
    if (!is_job_name(m.spec.name)) {
      return r_.invalid(*name,
                        "a job name: lowercase letters, digits, \"-\" and \".\", starting and "
                        "ending with a letter or digit, at most 63 characters",
                        "e.g. resnet50-run-2");
    }
    if (is_digits(m.spec.name)) {
      return r_.invalid(*name, "a name with at least one letter",
                        "an all-digit name would read as a job id in dependsOn");
    }
    if (const Field* labels = find(f, "labels")) {
      TY_ASSIGN_OR_RETURN(m.labels, r_.labels(*labels));
      if (source_ == ManifestSource::Submission) TY_RETURN_IF_ERROR(sim_gpu_profile(*labels));
    }
    return util::Status::ok();
  }

  // Simulated GPUs draw the job's load from this label; a misspelt profile would otherwise
  // quietly look healthy.
  util::Status sim_gpu_profile(const Field& labels) const {
    TY_ASSIGN_OR_RETURN(std::vector<Field> entries, r_.entries(labels));
    for (const Field& e : entries) {
      if (e.key.Scalar() != kLabelSimGpuProfile) continue;
      if (e.value.IsScalar() && is_sim_gpu_profile(e.value.Scalar())) continue;
      return r_.invalid(e, fmt::format("one of {}", sim_gpu_profile_list()),
                        "the load simulated GPUs show for this job; leave the label out for "
                        "healthy");
    }
    return util::Status::ok();
  }

  util::Status job_spec(const Field& spec, JobManifest& m) const {
    TY_ASSIGN_OR_RETURN(
        Fields f, r_.fields(spec, {"team", "priorityClass", "priority", "workers", "preemptible",
                                   "backoffLimit", "activeDeadlineSeconds", "dependsOn",
                                   "nodeSelector", "checkpoint", "template", "array", "elastic"}));
    TY_RETURN_IF_ERROR(team(f, m));
    if (const Field* arr = find(f, "array")) TY_RETURN_IF_ERROR(array(*arr, m));
    TY_RETURN_IF_ERROR(priority(f, m));
    TY_RETURN_IF_ERROR(lifecycle(f, m));
    if (const Field* deps = find(f, "dependsOn")) TY_RETURN_IF_ERROR(depends_on(*deps, m));
    if (const Field* sel = find(f, "nodeSelector")) TY_RETURN_IF_ERROR(node_selector(*sel, m));
    if (const Field* ckpt = find(f, "checkpoint")) TY_RETURN_IF_ERROR(checkpoint(*ckpt, m));
    const Field* tmpl = find(f, "template");
    if (tmpl == nullptr)
      return r_.missing(spec, "template", "add template: {command: [<program>, <arg>]}");
    return internal::read_template(r_, source_, *tmpl, m);
  }

  util::Status team(const Fields& f, JobManifest& m) const {
    m.spec.team = "default";
    const Field* team = find(f, "team");
    if (team == nullptr) return util::Status::ok();
    TY_ASSIGN_OR_RETURN(m.spec.team, r_.string(*team));
    const bool ok = source_ == ManifestSource::Store ? is_legacy_team_name(m.spec.team)
                                                     : check_team_name(m.spec.team).is_ok();
    if (!ok) {
      return r_.invalid(*team, fmt::format("a team name: 1 to {} letters, digits, \"-\", \"_\" or "
                                           "\".\", starting with a letter or digit",
                                           kMaxNameLength));
    }
    return util::Status::ok();
  }

  util::Status priority(const Fields& f, JobManifest& m) const {
    if (const Field* cls = find(f, "priorityClass")) {
      TY_ASSIGN_OR_RETURN(std::string name, r_.string(*cls));
      if (name == "low") {
        m.spec.priority = kPriorityLow;
      } else if (name == "normal") {
        m.spec.priority = kPriorityNormal;
      } else if (name == "high") {
        m.spec.priority = kPriorityHigh;
      } else {
        return r_.invalid(*cls, "one of low, normal, high",
                          "or give an explicit priority: <number> as well");
      }
      m.spec.priority_class = name;
    }
    if (const Field* value = find(f, "priority")) {
      TY_ASSIGN_OR_RETURN(const int64_t p, r_.integer(*value, 0, kMaxPriority));
      m.spec.priority = static_cast<int>(p);
    }
    return util::Status::ok();
  }

  // Gang size, preemption, retries and the deadline: how the job may be run and ended.
  util::Status lifecycle(const Fields& f, JobManifest& m) const {
    if (const Field* workers = find(f, "workers")) {
      TY_ASSIGN_OR_RETURN(const int64_t n, r_.integer(*workers, 1, kMaxWorkers));
      m.spec.workers = static_cast<int>(n);
    }
    if (const Field* elastic = find(f, "elastic")) TY_RETURN_IF_ERROR(elastic_range(*elastic, m));
    if (const Field* preemptible = find(f, "preemptible")) {
      TY_ASSIGN_OR_RETURN(m.spec.preemptible, r_.boolean(*preemptible));
    }
    if (const Field* backoff = find(f, "backoffLimit")) {
      TY_ASSIGN_OR_RETURN(const int64_t n,
                          r_.integer(*backoff, 0, kMaxBackoffLimit, "0 means a failure is final"));
      m.backoff_limit = static_cast<int>(n);
    }
    if (const Field* deadline = find(f, "activeDeadlineSeconds")) {
      TY_ASSIGN_OR_RETURN(const int64_t s,
                          r_.integer(*deadline, 1, kMaxSeconds, "leave it out for no deadline"));
      m.spec.runtime_limit = util::seconds(s);
    }
    return util::Status::ok();
  }

  // elastic: {minWorkers, maxWorkers}, around spec.workers (read before this).
  util::Status elastic_range(const Field& el, JobManifest& m) const {
    TY_ASSIGN_OR_RETURN(Fields f, r_.fields(el, {"minWorkers", "maxWorkers"}));
    const Field* lo = find(f, "minWorkers");
    const Field* hi = find(f, "maxWorkers");
    if (hi == nullptr)
      return r_.missing(el, "maxWorkers", "the most workers the job can use, e.g. maxWorkers: 8");
    TY_ASSIGN_OR_RETURN(const int64_t max,
                        r_.integer(*hi, m.spec.workers, kMaxWorkers, "at least spec.workers"));
    int64_t min = 1;
    if (lo != nullptr) {
      TY_ASSIGN_OR_RETURN(min, r_.integer(*lo, 1, m.spec.workers, "at most spec.workers"));
    }
    m.spec.min_workers = static_cast<int>(min);
    m.spec.max_workers = static_cast<int>(max);
    return util::Status::ok();
  }

  // Checked here so that every task name NAME-<index> is a job name the API accepts.
  util::Status array(const Field& arr, JobManifest& m) const {
    TY_ASSIGN_OR_RETURN(m.array, r_.string(arr));
    auto spec = parse_array_spec(m.array);
    if (!spec.is_ok())
      return r_.error(arr, fmt::format("{}: {}", arr.path, spec.status().message()));
    const size_t suffix = array_name_suffix_length(*spec);
    if (m.spec.name.size() + suffix > kMaxNameLength) {
      return r_.error(arr, fmt::format("{}: task names {} have more than {} characters; shorten "
                                       "metadata.name to at most {}",
                                       arr.path, array_task_name(m.spec.name, spec->indices.back()),
                                       kMaxNameLength, kMaxNameLength - suffix));
    }
    return util::Status::ok();
  }

  util::Status depends_on(const Field& deps, JobManifest& m) const {
    TY_ASSIGN_OR_RETURN(std::vector<std::string> names, r_.string_list(deps));
    TY_ASSIGN_OR_RETURN(std::vector<Field> items, r_.items(deps, ""));
    std::set<std::string_view> seen;
    for (size_t idx = 0; idx < names.size(); ++idx) {
      const std::string& dep = names[idx];
      if (!is_job_id(dep) && !is_job_name(dep))
        return r_.invalid(items[idx], "a job name or a numeric job id");
      if (dep == m.spec.name) return r_.invalid(items[idx], "another job than this one");
      if (!seen.insert(dep).second)
        return r_.error(items[idx],
                        fmt::format("{}: \"{}\" is listed twice", items[idx].path, dep));
    }
    m.depends_on = std::move(names);
    return util::Status::ok();
  }

  // The gpu.product key becomes spec.allowed_gpu_models (canonical names; a comma-separated
  // value allows any of several models); other keys are matched against node labels.
  util::Status node_selector(const Field& sel, JobManifest& m) const {
    TY_ASSIGN_OR_RETURN(std::vector<Field> entries, r_.entries(sel));
    for (const Field& e : entries) {
      if (e.key.Scalar() != kLabelGpuProduct) {
        TY_RETURN_IF_ERROR(r_.label(sel, e, m.spec.node_selector));
        continue;
      }
      TY_ASSIGN_OR_RETURN(std::string value, r_.string(e));
      const std::string want = "GPU model names such as H100-80GB, separated by commas";
      const std::string known = fmt::format("known models: {}", known_models());
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = std::min(value.find(',', start), value.size());
        std::string_view item = std::string_view(value).substr(start, comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        const Accelerator* a = find_accelerator(item);
        if (a == nullptr) return r_.invalid(e, want, known);
        auto& models = m.spec.allowed_gpu_models;
        if (std::find(models.begin(), models.end(), a->name) == models.end())
          models.emplace_back(a->name);
        start = comma + 1;
      }
    }
    return util::Status::ok();
  }

  util::Status checkpoint(const Field& ckpt, JobManifest& m) const {
    TY_ASSIGN_OR_RETURN(Fields f,
                        r_.fields(ckpt, {"dir", "gracePeriodSeconds", "intervalSeconds"}));
    if (const Field* dir = find(f, "dir")) {
      TY_ASSIGN_OR_RETURN(m.checkpoint.dir, r_.string(*dir));
      if (!m.checkpoint.dir.empty() && m.checkpoint.dir.front() != '/')
        return r_.invalid(*dir, "an absolute path (starting with /)");
      if (source_ == ManifestSource::Submission && m.checkpoint.dir.size() >= kMaxPathBytes)
        return r_.invalid(*dir, fmt::format("a path of at most {} bytes", kMaxPathBytes - 1),
                          "Linux's PATH_MAX; the checkpoint directory could not be made");
    }
    if (const Field* grace = find(f, "gracePeriodSeconds")) {
      TY_ASSIGN_OR_RETURN(const int64_t s,
                          r_.integer(*grace, 0, kMaxGraceSeconds,
                                     "a job gets at most an hour between notice and SIGKILL"));
      m.checkpoint.grace_period = util::seconds(s);
    }
    if (const Field* interval = find(f, "intervalSeconds")) {
      TY_ASSIGN_OR_RETURN(const int64_t s, r_.integer(*interval, 0, kMaxSeconds,
                                                      "0 means the job does not checkpoint"));
      m.spec.checkpoint_interval = util::seconds(s);
    }
    return util::Status::ok();
  }

  ManifestReader r_;
  ManifestSource source_;
};

util::Result<JobManifest> parse_document(std::string_view text, const std::string& file,
                                         ManifestSource source, const YamlLimits& limits) {
  TY_ASSIGN_OR_RETURN(const YamlDocument doc, load_yaml(text, file, limits));
  const YamlReader r(file, limits);
  if (doc.second) {
    return r.error_at(*doc.second,
                      "one job per document: a second document starts here (put each job in a "
                      "file of its own)");
  }
  if (doc.root.value.IsNull()) {
    return r.error_at(YAML::Mark{},
                      fmt::format("the document is empty (a job starts with apiVersion: {} and "
                                  "kind: Job)",
                                  kApiVersion));
  }
  return ManifestParser(file, source, limits).parse(doc.root);
}

// True when the text holds a JSON \uD800-\uDFFF escape: half of a UTF-16 surrogate pair, which
// is how JSON writers such as Python's json.dumps spell characters beyond the BMP (emoji).
bool has_surrogate_escape(std::string_view text) {
  for (size_t i = text.find("\\u"); i != std::string_view::npos; i = text.find("\\u", i + 1)) {
    if (i + 3 < text.size() && (text[i + 2] == 'd' || text[i + 2] == 'D') &&
        std::string_view("89abAB").find(text[i + 3]) != std::string_view::npos)
      return true;
  }
  return false;
}

// yaml-cpp refuses surrogate-pair escapes ("invalid unicode"), so a JSON body that uses them is
// read by a JSON parser and written back with the characters themselves (same document, other
// line breaks: errors then count lines of that form). Anything else is left to the YAML parser.
std::optional<std::string> json_with_plain_characters(std::string_view text) {
  if (!has_surrogate_escape(text)) return std::nullopt;
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return escape_yaml_line_breaks(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

util::Result<JobManifest> parse_text(std::string_view text, std::string_view file,
                                     ManifestSource source) {
  const std::string name(file);
  const YamlLimits& limits = source == ManifestSource::Store ? kStoredYamlLimits : kYamlLimits;
  // The limits hold for the text as sent; its rewritten form may be longer (indentation).
  if (text.size() <= limits.max_document_bytes) {
    if (auto plain = json_with_plain_characters(text)) {
      YamlLimits rewritten = limits;
      rewritten.max_document_bytes = std::max(limits.max_document_bytes, plain->size());
      return parse_document(*plain, name, source, rewritten);
    }
  }
  return parse_document(text, name, source, limits);
}

}  // namespace

util::Result<JobManifest> parse_job_manifest(std::string_view text, std::string_view file) {
  TY_ASSIGN_OR_RETURN(JobManifest m, parse_text(text, file, ManifestSource::Submission));
  // yaml-cpp decodes the escapes \N and \_ to single Latin-1 bytes, not UTF-8: such a string
  // could not be stored as written.
  if (auto bad = first_invalid_utf8(m)) {
    return util::invalid_argument(fmt::format(
        "{}: a string of the job spec is not valid UTF-8 ({}); the YAML escapes \\N and \\_ "
        "give such bytes: write \\u0085 or \\u00a0 instead",
        file, *bad));
  }
  // What is accepted must be storable: the limits above keep the stored form far below this
  // bound, and this check keeps it so if they change.
  if (const size_t stored = job_manifest_to_json(m).size(); stored > kMaxStoredManifestBytes) {
    return util::invalid_argument(
        fmt::format("{}: the job spec's stored form would have {} bytes; at most {} can be "
                    "stored (shorten the command, args, env or labels)",
                    file, stored, kMaxStoredManifestBytes));
  }
  return m;
}

util::Result<JobManifest> parse_stored_job_manifest(std::string_view text, std::string_view file) {
  return parse_text(text, file, ManifestSource::Store);
}

}  // namespace trainyard::model
