#include "exec/slurm_json.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <simdjson.h>

#include "model/slurm_hostlist.h"

namespace trainyard::exec {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool parse_int(std::string_view s, int64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// A number as any Slurm release writes it: 7, 7.0, "7", or {"set": true, "number": 7}
// ({"set": false} and {"infinite": true} read as `fallback`).
int64_t number(element e, int64_t fallback = 0) {
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string_view s;
  switch (e.type()) {
    case simdjson::dom::element_type::INT64:
      if (e.get_int64().get(i) == simdjson::SUCCESS) return i;
      break;
    case simdjson::dom::element_type::UINT64:
      if (e.get_uint64().get(u) == simdjson::SUCCESS)
        return u > static_cast<uint64_t>(INT64_MAX) ? fallback : static_cast<int64_t>(u);
      break;
    case simdjson::dom::element_type::DOUBLE:
      if (e.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::fabs(d) < 9e18)
        return static_cast<int64_t>(d);
      break;
    case simdjson::dom::element_type::STRING:
      if (e.get_string().get(s) == simdjson::SUCCESS && parse_int(s, i)) return i;
      break;
    case simdjson::dom::element_type::OBJECT: {
      bool flag = false;
      if (e["infinite"].get_bool().get(flag) == simdjson::SUCCESS && flag) return fallback;
      if (e["set"].get_bool().get(flag) == simdjson::SUCCESS && !flag) return fallback;
      element n;
      if (e["number"].get(n) == simdjson::SUCCESS) return number(n, fallback);
      break;
    }
    default:
      break;
  }
  return fallback;
}

int64_t number_at(element obj, std::string_view key, int64_t fallback = 0) {
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS) return fallback;
  return number(e, fallback);
}

std::string string_at(element obj, std::string_view key) {
  std::string_view s;
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS) return "";
  if (e.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  return "";
}

// A list of words: ["A", "B"], "A", or "A,B" (features, partitions, state flags).
std::vector<std::string> words_at(element obj, std::string_view key) {
  std::vector<std::string> out;
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS) return out;
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) {
    size_t start = 0;
    while (start < s.size()) {
      size_t end = s.find(',', start);
      if (end == std::string_view::npos) end = s.size();
      if (end > start) out.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }
  array a;
  if (e.get_array().get(a) != simdjson::SUCCESS) return out;
  for (element item : a)
    if (item.get_string().get(s) == simdjson::SUCCESS) out.emplace_back(s);
  return out;
}

// A state: "RUNNING" (22.05), ["RUNNING"] or ["IDLE", "DRAIN"] (later): the first word is the
// base state, the rest are flags. 22.05 nodes say "idle" plus "state_flags": ["DRAIN"], and
// some versions write "IDLE+DRAIN" in one string.
void read_state(element obj, std::string_view key, std::string& state,
                std::vector<std::string>& flags) {
  std::vector<std::string> w = words_at(obj, key);
  if (w.size() == 1 && w[0].find('+') != std::string::npos) {
    std::string all = w[0];
    w.clear();
    size_t start = 0;
    while (start <= all.size()) {
      size_t end = all.find('+', start);
      if (end == std::string::npos) end = all.size();
      if (end > start) w.push_back(all.substr(start, end - start));
      start = end + 1;
    }
  }
  if (w.empty()) return;
  state = upper(w[0]);
  for (size_t i = 1; i < w.size(); ++i) flags.push_back(upper(w[i]));
}

// exit_code: a wait status (22.05) or
// {"status": ["EXITED"], "return_code": {"number": 75}, "signal": {"id": {"number": 9}}}.
void read_exit(element job, SlurmJob& out) {
  element e;
  if (job["exit_code"].get(e) != simdjson::SUCCESS) return;
  if (e.type() == simdjson::dom::element_type::OBJECT) {
    element rc, sig;
    if (e["return_code"].get(rc) == simdjson::SUCCESS) {
      out.exit_code = static_cast<int>(number(rc));
      out.has_exit = true;
    }
    if (e["signal"].get(sig) == simdjson::SUCCESS) {
      element id;
      if (sig["id"].get(id) == simdjson::SUCCESS) out.exit_signal = static_cast<int>(number(id));
    }
    return;
  }
  // 22.05 writes the raw wait status: 19200 = exit 75 (75 << 8), 9 = killed by SIGKILL.
  const int64_t raw = number(e);
  if ((raw & 0x7f) == 0) {
    out.exit_code = static_cast<int>((raw >> 8) & 0xff);
  } else {
    out.exit_signal = static_cast<int>(raw & 0x7f);
  }
  out.has_exit = true;
}

util::Result<element> parse_document(simdjson::dom::parser& parser, std::string_view json,
                                     std::string_view what) {
  element doc;
  auto err = parser.parse(json.data(), json.size()).get(doc);
  if (err != simdjson::SUCCESS)
    return util::invalid_argument(
        fmt::format("{} output is not valid JSON: {}", what, simdjson::error_message(err)));
  if (doc.type() != simdjson::dom::element_type::OBJECT)
    return util::invalid_argument(fmt::format("{} output is not a JSON object", what));
  // Slurm reports its own failures inside the document.
  array errors;
  if (doc["errors"].get_array().get(errors) == simdjson::SUCCESS && errors.size() > 0) {
    std::string text;
    for (element e : errors) {
      std::string msg = string_at(e, "error");
      if (msg.empty()) msg = string_at(e, "description");
      if (!msg.empty()) text += (text.empty() ? "" : "; ") + msg;
    }
    if (!text.empty()) return util::unavailable(fmt::format("{} reported: {}", what, text));
  }
  return doc;
}

}  // namespace

util::Result<std::vector<SlurmJob>> parse_squeue_json(std::string_view json) {
  simdjson::dom::parser parser;
  TY_ASSIGN_OR_RETURN(element doc, parse_document(parser, json, "squeue --json"));
  array jobs;
  if (doc["jobs"].get_array().get(jobs) != simdjson::SUCCESS)
    return util::invalid_argument("squeue --json output has no \"jobs\" array");
  std::vector<SlurmJob> out;
  out.reserve(jobs.size());
  for (element j : jobs) {
    if (j.type() != simdjson::dom::element_type::OBJECT) continue;
    SlurmJob job;
    job.id = number_at(j, "job_id");
    if (job.id <= 0) continue;
    job.het_job_id = number_at(j, "het_job_id");
    job.het_job_offset = static_cast<int>(number_at(j, "het_job_offset"));
    job.name = string_at(j, "name");
    job.comment = string_at(j, "comment");
    std::vector<std::string> flags;
    read_state(j, "job_state", job.state, flags);
    job.reason = string_at(j, "state_reason");
    job.nodes = string_at(j, "nodes");
    read_exit(j, job);
    job.submit_time = number_at(j, "submit_time");
    job.start_time = number_at(j, "start_time");
    job.end_time = number_at(j, "end_time");
    job.user_id = number_at(j, "user_id", -1);
    job.partition = string_at(j, "partition");
    job.cpus = number_at(j, "cpus");
    array detail;
    if (j["gres_detail"].get_array().get(detail) == simdjson::SUCCESS) {
      for (element d : detail) {
        std::string_view s;
        int gpus = 0;
        if (d.get_string().get(s) == simdjson::SUCCESS)
          for (const auto& g : parse_gres_gpus(s)) gpus += g.count;
        job.gpus_per_node.push_back(gpus);
      }
    }
    out.push_back(std::move(job));
  }
  return out;
}

util::Result<std::vector<SlurmNodeInfo>> parse_slurm_nodes_json(std::string_view json) {
  simdjson::dom::parser parser;
  TY_ASSIGN_OR_RETURN(element doc, parse_document(parser, json, "sinfo --json"));
  std::vector<element> node_elements;
  array nodes;
  if (doc["nodes"].get_array().get(nodes) == simdjson::SUCCESS) {
    for (element n : nodes) node_elements.push_back(n);
  } else {
    array sinfo;
    if (doc["sinfo"].get_array().get(sinfo) != simdjson::SUCCESS)
      return util::invalid_argument("sinfo --json output has no \"nodes\" or \"sinfo\" array");
    for (element row : sinfo) {
      // Later releases: one row per (partition, node set); node details under "nodes".
      element rn;
      if (row["nodes"].get(rn) == simdjson::SUCCESS) {
        array list;
        if (rn["nodes"].get_array().get(list) == simdjson::SUCCESS) continue;  // names only
      }
      node_elements.push_back(row);
    }
  }
  std::vector<SlurmNodeInfo> out;
  for (element n : node_elements) {
    if (n.type() != simdjson::dom::element_type::OBJECT) continue;
    SlurmNodeInfo info;
    info.name = string_at(n, "name");
    if (info.name.empty()) continue;
    if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.name == info.name; }))
      continue;
    info.address = string_at(n, "address");
    info.hostname = string_at(n, "hostname");
    read_state(n, "state", info.state, info.flags);
    for (auto& f : words_at(n, "state_flags")) info.flags.push_back(upper(f));
    info.reason = string_at(n, "reason");
    info.cpus = number_at(n, "cpus");
    info.alloc_cpus = number_at(n, "alloc_cpus");
    info.real_memory_mb = number_at(n, "real_memory");
    info.alloc_memory_mb = number_at(n, "alloc_memory");
    info.gres = string_at(n, "gres");
    info.gres_used = string_at(n, "gres_used");
    info.features = words_at(n, "active_features");
    if (info.features.empty()) info.features = words_at(n, "features");
    info.partitions = words_at(n, "partitions");
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<GresGpus> parse_gres_gpus(std::string_view gres) {
  std::vector<GresGpus> out;
  size_t i = 0;
  while (i < gres.size()) {
    // Entries are separated by commas outside parentheses.
    size_t end = i;
    int depth = 0;
    while (end < gres.size() && (depth > 0 || gres[end] != ',')) {
      if (gres[end] == '(') ++depth;
      if (gres[end] == ')' && depth > 0) --depth;
      ++end;
    }
    std::string_view entry = gres.substr(i, end - i);
    i = end + 1;
    std::string_view extra;
    if (const size_t paren = entry.find('('); paren != std::string_view::npos) {
      extra = entry.substr(paren + 1);
      if (!extra.empty() && extra.back() == ')') extra.remove_suffix(1);
      entry = entry.substr(0, paren);
    }
    // gres/gpu:h100=2 (TRES style) or gpu:h100:2 or gpu:2 or gpu:h100 (count 1) or gpu.
    if (entry.starts_with("gres/")) entry.remove_prefix(5);
    std::string e(entry);
    std::replace(e.begin(), e.end(), '=', ':');
    std::vector<std::string> parts;
    size_t s = 0;
    while (s <= e.size()) {
      size_t c = e.find(':', s);
      if (c == std::string::npos) c = e.size();
      parts.push_back(e.substr(s, c - s));
      s = c + 1;
    }
    if (parts.empty() || parts[0] != "gpu") continue;
    GresGpus g;
    int64_t n = 0;
    if (parts.size() == 1) {
      g.count = 1;
    } else if (parts.size() == 2) {
      if (parse_int(parts[1], n))
        g.count = static_cast<int>(std::clamp<int64_t>(n, 0, 1 << 20));
      else {
        g.type = parts[1];
        g.count = 1;
      }
    } else {
      g.type = parts[1];
      if (parse_int(parts[2], n)) g.count = static_cast<int>(std::clamp<int64_t>(n, 0, 1 << 20));
    }
    if (extra.starts_with("IDX:")) {
      auto idx = model::expand_hostlist(fmt::format("i[{}]", extra.substr(4)), 1024);
      if (idx.is_ok() && idx->size() <= 1024)
        for (const auto& v : *idx) {
          int64_t k = 0;
          if (parse_int(std::string_view(v).substr(1), k)) g.indices.push_back(static_cast<int>(k));
        }
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace trainyard::exec
