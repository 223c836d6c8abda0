// Writers of a job manifest: canonical JSON (every defaulted field explicit, fields in
// Kubernetes order) and the same document as YAML. parse_job_manifest() reads both back.
#include <chrono>
#include <string>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "model/job_manifest.h"
#include "model/worker_limits.h"

namespace trainyard::model {
namespace {

using Json = nlohmann::ordered_json;

int64_t whole_seconds(util::Duration d) {
  return std::chrono::ceil<std::chrono::seconds>(d).count();
}

Json labels_json(const Labels& labels) {
  Json out = Json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

Json node_selector_json(const JobSpec& spec) {
  Json out = labels_json(spec.node_selector);
  if (spec.allowed_gpu_models.empty()) return out;
  std::string models;
  for (const auto& name : spec.allowed_gpu_models) models += (models.empty() ? "" : ",") + name;
  out[kLabelGpuProduct] = models;
  return out;
}

Json template_json(const JobManifest& m) {
  Json env = Json::array();
  for (const auto& [name, value] : m.process.env) env.push_back({{"name", name}, {"value", value}});
  Json out = {{"command", m.process.command}, {"args", m.process.args}, {"env", env}};
  if (!m.process.working_dir.empty()) out["workingDir"] = m.process.working_dir;
  out["resources"] = {{"limits", worker_limits_json<Json>(m.spec.worker)}};
  return out;
}

Json spec_json(const JobManifest& m) {
  const JobSpec& s = m.spec;
  Json out = {{"team", s.team},
              {"priorityClass", s.priority_class},
              {"priority", s.priority},
              {"workers", s.workers},
              {"preemptible", s.preemptible},
              {"backoffLimit", m.backoff_limit}};
  if (!m.array.empty()) out["array"] = m.array;
  if (s.elastic()) out["elastic"] = {{"minWorkers", s.min_workers}, {"maxWorkers", s.max_workers}};
  if (s.runtime_limit.count() > 0) out["activeDeadlineSeconds"] = whole_seconds(s.runtime_limit);
  out["dependsOn"] = m.depends_on;
  out["nodeSelector"] = node_selector_json(s);
  Json ckpt = Json::object();
  if (!m.checkpoint.dir.empty()) ckpt["dir"] = m.checkpoint.dir;
  ckpt["gracePeriodSeconds"] = whole_seconds(m.checkpoint.grace_period);
  ckpt["intervalSeconds"] = whole_seconds(s.checkpoint_interval);
  out["checkpoint"] = ckpt;
  out["template"] = template_json(m);
  return out;
}

Json manifest_json(const JobManifest& m) {
  Json meta = {{"name", m.spec.name}, {"labels", labels_json(m.labels)}};
  return {{"apiVersion", "trainyard.dev/v1"},
          {"kind", "Job"},
          {"metadata", meta},
          {"spec", spec_json(m)}};
}

bool has_control_characters(const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) return true;
  }
  return false;
}

// A literal block (|) keeps a multi-line script readable; it is only exact for text that ends
// in one newline, starts with no space and has no other control characters.
bool fits_literal_block(const std::string& s) {
  if (s.size() < 2 || s.back() != '\n' || s[s.size() - 2] == '\n' || s.front() == ' ' ||
      s.front() == '\n')
    return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7F) return false;
  }
  return true;
}

void emit_yaml(YAML::Emitter& out, const Json& j) {
  if (j.is_object()) {
    out << (j.empty() ? YAML::Flow : YAML::Block) << YAML::BeginMap;
    for (const auto& [key, value] : j.items()) {
      out << YAML::Key << key << YAML::Value;
      emit_yaml(out, value);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    bool flow = true;
    for (const Json& item : j) {
      flow =
          flow && !item.is_structured() &&
          !(item.is_string() && item.get_ref<const std::string&>().find('\n') != std::string::npos);
    }
    out << (flow ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const Json& item : j) emit_yaml(out, item);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (fits_literal_block(s)) {
      out << YAML::Literal;
    } else if (has_control_characters(s)) {
      // A plain scalar keeps a lone carriage return when read back, but yaml-cpp's emitter may
      // fold it into a line break; an escaped double-quoted string is exact.
      out << YAML::DoubleQuoted;
    }
    out << s;
  } else {
    out << j.dump();  // numbers and booleans, as JSON writes them
  }
}

}  // namespace

std::string escape_yaml_line_breaks(std::string json) {
  // U+0085 (NEL), U+2028, U+2029 are line breaks to a YAML 1.1 reader and U+FEFF a byte-order
  // mark: raw in a quoted string they would be folded or dropped when the store reads it back.
  static constexpr std::pair<std::string_view, std::string_view> kEscapes[] = {
      {"\xC2\x85", "\\u0085"},
      {"\xE2\x80\xA8", "\\u2028"},
      {"\xE2\x80\xA9", "\\u2029"},
      {"\xEF\xBB\xBF", "\\ufeff"}};
  for (const auto& [raw, escaped] : kEscapes) {
    for (size_t at = json.find(raw); at != std::string::npos; at = json.find(raw, at)) {
      json.replace(at, raw.size(), escaped);
      at += escaped.size();
    }
  }
  return json;
}

std::optional<std::string> first_invalid_utf8(const JobManifest& m) {
  try {
    (void)manifest_json(m).dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::type_error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

std::string job_manifest_to_json(const JobManifest& m) {
  return escape_yaml_line_breaks(
      manifest_json(m).dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

std::string job_manifest_to_yaml(const JobManifest& m) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit_yaml(out, manifest_json(m));
  return std::string(out.c_str()) + "\n";
}

}  // namespace trainyard::model
