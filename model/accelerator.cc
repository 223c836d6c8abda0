#include "model/accelerator.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace trainyard::model {
namespace {

constexpr uint8_t kStartsEvery1 = 0b0111'1111;  // 0..6
constexpr uint8_t kStartsEven = 0b0101'0101;    // 0,2,4,6
constexpr uint8_t kStarts024 = 0b0001'0101;     // 0,2,4
constexpr uint8_t kStarts04 = 0b0001'0001;      // 0,4
constexpr uint8_t kStart0 = 0b0000'0001;        // 0

constexpr Bytes gb(int64_t n) {
  return gib(n);
}

// A100-40GB (nvidia-smi mig -lgipp on A100-SXM4-40GB).
constexpr std::array<MigProfile, 6> kA100_40Mig{{
    {"1g.5gb", 1, 1, gb(5), kStartsEvery1, 7},
    {"1g.10gb", 1, 2, gb(10), kStartsEven, 4},
    {"2g.10gb", 2, 2, gb(10), kStarts024, 3},
    {"3g.20gb", 3, 4, gb(20), kStarts04, 2},
    {"4g.20gb", 4, 4, gb(20), kStart0, 1},
    {"7g.40gb", 7, 8, gb(40), kStart0, 1},
}};
// A100-80GB and H100-80GB share the layout.
constexpr std::array<MigProfile, 6> k80GbMig{{
    {"1g.10gb", 1, 1, gb(10), kStartsEvery1, 7},
    {"1g.20gb", 1, 2, gb(20), kStartsEven, 4},
    {"2g.20gb", 2, 2, gb(20), kStarts024, 3},
    {"3g.40gb", 3, 4, gb(40), kStarts04, 2},
    {"4g.40gb", 4, 4, gb(40), kStart0, 1},
    {"7g.80gb", 7, 8, gb(80), kStart0, 1},
}};
constexpr std::array<MigProfile, 6> kH200Mig{{
    {"1g.18gb", 1, 1, gb(18), kStartsEvery1, 7},
    {"1g.35gb", 1, 2, gb(35), kStartsEven, 4},
    {"2g.35gb", 2, 2, gb(35), kStarts024, 3},
    {"3g.71gb", 3, 4, gb(71), kStarts04, 2},
    {"4g.71gb", 4, 4, gb(71), kStart0, 1},
    {"7g.141gb", 7, 8, gb(141), kStart0, 1},
}};

const std::array<Accelerator, 14> kCatalog{{
    {"H100-80GB", "nvidia", gb(80), 989.0, 3350.0, true, k80GbMig},
    {"H200-141GB", "nvidia", gb(141), 989.0, 4800.0, true, kH200Mig},
    {"A100-80GB", "nvidia", gb(80), 312.0, 2039.0, true, k80GbMig},
    {"A100-40GB", "nvidia", gb(40), 312.0, 1555.0, true, kA100_40Mig},
    {"L40S", "nvidia", gb(48), 362.0, 864.0, false, {}},
    {"L4", "nvidia", gb(24), 121.0, 300.0, false, {}},
    {"A10G", "nvidia", gb(24), 70.0, 600.0, false, {}},
    {"A10", "nvidia", gb(24), 125.0, 600.0, false, {}},
    {"T4", "nvidia", gb(16), 65.0, 320.0, false, {}},
    {"V100-16GB", "nvidia", gb(16), 125.0, 900.0, true, {}},
    {"V100-32GB", "nvidia", gb(32), 125.0, 900.0, true, {}},
    {"P100", "nvidia", gb(16), 18.7, 732.0, false, {}},
    {"K80", "nvidia", gb(12), 4.4, 240.0, false, {}},
    {"RTX-2080TI", "nvidia", gb(11), 53.8, 616.0, false, {}},
}};

struct Alias {
  std::string_view alias;
  std::string_view canonical;
};
constexpr Alias kAliases[] = {
    {"h100", "H100-80GB"},
    {"h100-sxm", "H100-80GB"},
    {"h100-sxm5-80gb", "H100-80GB"},
    {"h200", "H200-141GB"},
    {"a100", "A100-80GB"},
    {"a100-sxm4-80gb", "A100-80GB"},
    {"a100-sxm4-40gb", "A100-40GB"},
    {"v100", "V100-16GB"},
    {"v100m16", "V100-16GB"},
    {"v100m32", "V100-32GB"},
    {"v100-sxm2-16gb", "V100-16GB"},
    {"p100-16gb", "P100"},
    {"tesla-t4", "T4"},
    {"tesla-k80", "K80"},
    {"rtx", "RTX-2080TI"},
};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

const MigProfile* Accelerator::find_mig_profile(std::string_view profile) const {
  for (const auto& p : mig_profiles) {
    if (p.name == profile) return &p;
  }
  return nullptr;
}

std::span<const Accelerator> accelerator_catalog() {
  return kCatalog;
}

const Accelerator* find_accelerator(std::string_view name) {
  for (const auto& a : kCatalog) {
    if (iequal(a.name, name)) return &a;
  }
  for (const auto& al : kAliases) {
    if (iequal(al.alias, name)) return find_accelerator(al.canonical);
  }
  return nullptr;
}

std::string canonical_accelerator_name(std::string_view name) {
  const Accelerator* a = find_accelerator(name);
  return a ? std::string(a->name) : std::string(name);
}

}  // namespace trainyard::model
