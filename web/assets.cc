#include "web/assets.h"

namespace trainyard::web {

// Defined in the generated assets_data.cc (web/embed_assets.py).
extern const Asset kAssets[];
extern const size_t kAssetCount;

std::span<const Asset> all_assets() {
  return {kAssets, kAssetCount};
}

const Asset* find_asset(std::string_view name) {
  for (const Asset& a : all_assets())
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace trainyard::web
