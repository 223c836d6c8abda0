#include "cli/output.h"

#include <cstdio>
#include <ctime>
#include <iostream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "util/clock.h"

namespace trainyard::cli {
namespace {

void emit(YAML::Emitter& out, const nlohmann::json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      out << YAML::Key << k << YAML::Value;
      emit(out, v);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& v : j) emit(out, v);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << j.get<std::string>();
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

}  // namespace

std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], r[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string& v = c < r.size() ? r[c] : "";
      l += v;
      if (c + 1 < width.size()) l += std::string(width[c] - v.size() + 3, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string to_yaml(const nlohmann::json& j) {
  YAML::Emitter out;
  emit(out, j);
  return std::string(out.c_str()) + "\n";
}

std::string age_of(const nlohmann::json& time) {
  if (!time.is_string()) return "-";
  std::tm tm{};
  if (strptime(time.get<std::string>().c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return "-";
  const auto then = util::kEpoch + util::seconds(timegm(&tm));
  const int64_t s = std::max<int64_t>(0, (util::WallClock().now() - then).count() / 1000000);
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  if (s < 172800) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

void print_submitted(const model::SubmitReplyView& reply, bool quiet) {
  const model::JobView& job = reply.job;
  if (quiet) {
    std::printf("%lld\n", static_cast<long long>(job.id));
  } else if (reply.array_tasks) {
    // An array's id is its first task's id; its tasks have the ids up to lastId.
    const int64_t limit = job.array ? job.array->limit : 0;
    std::printf("array %lld submitted: %lld tasks, jobs %lld-%s (%s ...), team %s%s\n",
                static_cast<long long>(job.id), static_cast<long long>(*reply.array_tasks),
                static_cast<long long>(job.id),
                reply.last_id ? std::to_string(*reply.last_id).c_str() : "-", job.name.c_str(),
                job.team.c_str(),
                limit > 0 ? fmt::format(", at most {} running at once", limit).c_str() : "");
  } else {
    std::printf("job %lld submitted: %s (team %s)\n", static_cast<long long>(job.id),
                job.name.c_str(), job.team.c_str());
  }
}

std::string cell(const std::optional<std::string>& v) {
  return v ? *v : std::string("-");
}

std::string age_of(const std::optional<std::string>& time) {
  return time ? age_of(nlohmann::json(*time)) : std::string("-");
}

std::string cell(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

bool print_structured(const nlohmann::json& j, const std::string& output) {
  if (output == "json") {
    std::cout << j.dump(2) << "\n";
    return true;
  }
  if (output == "yaml") {
    std::cout << to_yaml(j);
    return true;
  }
  return false;
}

}  // namespace trainyard::cli
