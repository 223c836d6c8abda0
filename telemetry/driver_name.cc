#include "telemetry/driver_name.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

#include "model/accelerator.h"

namespace trainyard::telemetry {
namespace {

// A catalogued model as it appears in driver names: "A100-40GB" -> base "A100", tag "40GB".
struct CatalogKey {
  std::string base;        // model name without its memory tag and dashes, upper case
  std::string memory_tag;  // "40GB", or empty when the name has none
  const model::Accelerator* accelerator;
};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_memory_tag(std::string_view s) {
  return s.size() > 2 && s.ends_with("GB") &&
         std::all_of(s.begin(), s.end() - 2, [](char c) { return std::isdigit(c) != 0; });
}

// Upper-case words of a driver name, split at spaces, dashes and underscores, without the
// vendor and brand words that the catalog leaves out.
std::vector<std::string> name_tokens(std::string_view name) {
  std::vector<std::string> tokens;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty() && cur != "NVIDIA" && cur != "TESLA" && cur != "GEFORCE") {
      tokens.push_back(cur);
    }
    cur.clear();
  };
  for (char c : upper(name)) {
    if (c == ' ' || c == '-' || c == '_') {
      flush();
    } else {
      cur += c;
    }
  }
  flush();
  return tokens;
}

CatalogKey key_of(const model::Accelerator& a) {
  std::string name = upper(a.name);
  CatalogKey key{.base = name, .memory_tag = "", .accelerator = &a};
  size_t dash = name.rfind('-');
  if (dash != std::string::npos && is_memory_tag(std::string_view(name).substr(dash + 1))) {
    key.base = name.substr(0, dash);
    key.memory_tag = name.substr(dash + 1);
  }
  std::erase(key.base, '-');
  return key;
}

// Catalog entries whose base equals the concatenation of the first 1..3 name tokens (so
// "RTX 2080 TI" finds RTX-2080TI), shortest prefix first.
std::vector<CatalogKey> candidates_for(const std::vector<std::string>& tokens) {
  std::vector<CatalogKey> keys;
  for (const auto& a : model::accelerator_catalog()) keys.push_back(key_of(a));
  std::string prefix;
  for (size_t k = 0; k < tokens.size() && k < 3; ++k) {
    prefix += tokens[k];
    std::vector<CatalogKey> found;
    for (const auto& key : keys) {
      if (key.base == prefix) found.push_back(key);
    }
    if (!found.empty()) return found;
  }
  return {};
}

double relative_gap(model::Bytes a, model::Bytes b) {
  return std::abs(static_cast<double>(a.value() - b.value())) / static_cast<double>(a.value());
}

const model::Accelerator* pick(const std::vector<CatalogKey>& candidates,
                               const std::vector<std::string>& tokens, model::Bytes memory) {
  for (const auto& c : candidates) {
    if (!c.memory_tag.empty() &&
        std::find(tokens.begin(), tokens.end(), c.memory_tag) != tokens.end()) {
      return c.accelerator;
    }
  }
  if (candidates.size() == 1) return candidates[0].accelerator;
  if (memory.value() <= 0) return nullptr;  // memory variants and nothing to tell them apart
  const model::Accelerator* best = nullptr;
  for (const auto& c : candidates) {
    if (!best || relative_gap(c.accelerator->memory, memory) < relative_gap(best->memory, memory)) {
      best = c.accelerator;
    }
  }
  return best;
}

}  // namespace

std::string model_from_driver_name(std::string_view driver_name, model::Bytes memory) {
  std::string_view name = trim(driver_name);
  std::vector<std::string> tokens = name_tokens(name);
  const model::Accelerator* a = pick(candidates_for(tokens), tokens, memory);
  constexpr double kMaxMemoryGap = 0.12;
  if (!a || (memory.value() > 0 && relative_gap(a->memory, memory) > kMaxMemoryGap)) {
    return std::string(name);
  }
  return std::string(a->name);
}

std::string mig_profile_from_driver_name(std::string_view mig_name, std::string_view parent_model,
                                         model::Bytes memory) {
  std::string name = upper(mig_name);
  size_t at = name.find(" MIG ");
  if (at != std::string::npos) {
    std::string_view rest = trim(std::string_view(mig_name).substr(at + 5));
    std::string profile(rest.substr(0, rest.find(' ')));
    for (char& c : profile) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!profile.empty()) return profile;
  }
  const model::Accelerator* parent = model::find_accelerator(parent_model);
  if (!parent || memory.value() <= 0) return "";
  const model::MigProfile* best = nullptr;
  for (const auto& p : parent->mig_profiles) {
    // Profiles are listed smallest first, so a tie keeps the one with fewer compute slices.
    if (!best || relative_gap(p.memory, memory) < relative_gap(best->memory, memory)) best = &p;
  }
  return best ? std::string(best->name) : "";
}

}  // namespace trainyard::telemetry
