#include "model/slurm_gres.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "model/accelerator.h"

namespace trainyard::model {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> words(std::string_view type) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : lower(type)) {
    if (c == '-' || c == '_' || c == ' ') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "80gb" or "40g" -> 80 / 40; anything else -> 0.
int memory_gb(std::string_view w) {
  if (w.ends_with("gb")) {
    w.remove_suffix(2);
  } else if (w.ends_with("g")) {
    w.remove_suffix(1);
  } else {
    return 0;
  }
  if (!all_digits(w) || w.size() > 4) return 0;
  return std::stoi(std::string(w));
}

// Words that say nothing about which model it is.
bool is_noise(std::string_view w) {
  static constexpr std::string_view kNoise[] = {"nvidia", "tesla", "geforce", "pcie", "sxm",
                                                "sxm2",   "sxm3",  "sxm4",    "sxm5", "hbm2",
                                                "hbm2e",  "hbm3",  "hbm3e",   "nvl"};
  return std::find(std::begin(kNoise), std::end(kNoise), w) != std::end(kNoise);
}

// A family (the model words joined, memory and noise dropped) and the memory it names.
struct Family {
  std::string_view family;
  int memory_gb;  // 0 = any memory (the default variant when the type names none)
  std::string_view accelerator;
};

// Bare "a100" maps to A100-80GB, as find_accelerator("A100") does, so a trace that says "A100"
// and a gres.conf that says "a100" name the same model; sites with 40 GB parts write a100_40g
// (AutoDetect=nvml names carry the memory) or pass an override. Bare "v100" is the 16 GB part for
// the same reason. H100 NVL (94 GB) and PCIe parts map to the one catalogued H100, H100-80GB.
constexpr Family kFamilies[] = {
    {"a100", 80, "A100-80GB"},
    {"a100", 40, "A100-40GB"},
    {"a100", 0, "A100-80GB"},
    {"h100", 0, "H100-80GB"},
    {"h200", 0, "H200-141GB"},
    {"v100", 16, "V100-16GB"},
    {"v100", 32, "V100-32GB"},
    {"v100", 0, "V100-16GB"},
    {"v100s", 0, "V100-32GB"},
    {"l40s", 0, "L40S"},
    {"l4", 0, "L4"},
    {"a10g", 0, "A10G"},
    {"a10", 0, "A10"},
    {"t4", 0, "T4"},
    {"p100", 0, "P100"},
    {"k80", 0, "K80"},
    {"rtx2080ti", 0, "RTX-2080TI"},
    {"2080ti", 0, "RTX-2080TI"},
};

}  // namespace

std::optional<std::string> accelerator_for_gres_type(std::string_view type) {
  std::string family;
  int memory = 0;
  for (const std::string& w : words(type)) {
    if (w.find('.') != std::string::npos) return std::nullopt;  // MIG slice: "3g.40gb"
    if (is_noise(w)) continue;
    if (const int gb = memory_gb(w); gb > 0) {
      if (memory > 0 && memory != gb) return std::nullopt;
      memory = gb;
      continue;
    }
    family += w;
  }
  if (family.empty()) return std::nullopt;
  const bool multi_variant =
      std::any_of(std::begin(kFamilies), std::end(kFamilies),
                  [&](const Family& f) { return f.family == family && f.memory_gb > 0; });
  for (const Family& f : kFamilies) {
    if (f.family != family) continue;
    // Models sold in one memory size ignore the memory word; others must name a known size.
    if (multi_variant && memory > 0 && f.memory_gb != memory) continue;
    if (multi_variant && memory == 0 && f.memory_gb != 0) continue;
    const Accelerator* a = find_accelerator(f.accelerator);
    if (a == nullptr) return std::nullopt;
    return std::string(a->name);
  }
  return std::nullopt;
}

std::optional<std::string> accelerator_for_gres_type(
    std::string_view type, const std::map<std::string, std::string>& overrides) {
  const std::string key = lower(type);
  for (const auto& [from, to] : overrides) {
    if (lower(from) != key) continue;
    const Accelerator* a = find_accelerator(to);
    if (a == nullptr) return std::nullopt;
    return std::string(a->name);
  }
  return accelerator_for_gres_type(type);
}

std::string known_gres_types_hint() {
  std::string models;
  for (const Accelerator& a : accelerator_catalog()) {
    models += (models.empty() ? "" : ", ") + std::string(a.name);
  }
  return "GRES types that map look like a100, a100_40g, nvidia_a100-sxm4-80gb, h100, "
         "nvidia_h100_80gb_hbm3, h200, v100, tesla_v100-sxm2-32gb, v100s, l40s, l4, a10, a10g, "
         "t4, p100, k80, rtx_2080_ti (MIG slice types are not read); trainyard models: " +
         models;
}

}  // namespace trainyard::model
