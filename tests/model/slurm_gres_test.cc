#include <gtest/gtest.h>

#include "model/accelerator.h"
#include "model/slurm_gres.h"

namespace trainyard::model {
namespace {

struct Case {
  const char* type;
  const char* accelerator;
};

TEST(SlurmGres, MapsTheNamingStylesOfGresConfAndNvmlAutoDetect) {
  const Case cases[] = {
      {"a100", "A100-80GB"},
      {"A100", "A100-80GB"},
      {"a100_40g", "A100-40GB"},
      {"a100-80gb", "A100-80GB"},
      {"a100-sxm4-80gb", "A100-80GB"},
      {"nvidia_a100-sxm4-80gb", "A100-80GB"},
      {"nvidia_a100-sxm4-40gb", "A100-40GB"},
      {"nvidia_a100_80gb_pcie", "A100-80GB"},
      {"NVIDIA_A100-PCIE-40GB", "A100-40GB"},
      {"h100", "H100-80GB"},
      {"h100_80gb", "H100-80GB"},
      {"nvidia_h100_80gb_hbm3", "H100-80GB"},
      {"h100-nvl", "H100-80GB"},
      {"nvidia_h100_nvl", "H100-80GB"},
      {"h200", "H200-141GB"},
      {"nvidia_h200", "H200-141GB"},
      {"v100", "V100-16GB"},
      {"tesla_v100-sxm2-16gb", "V100-16GB"},
      {"tesla_v100-sxm2-32gb", "V100-32GB"},
      {"v100_32g", "V100-32GB"},
      {"v100s", "V100-32GB"},
      {"tesla_v100s-pcie-32gb", "V100-32GB"},
      {"l4", "L4"},
      {"nvidia_l4", "L4"},
      {"t4", "T4"},
      {"tesla_t4", "T4"},
      {"a10", "A10"},
      {"nvidia_a10", "A10"},
      {"a10g", "A10G"},
      {"l40s", "L40S"},
      {"nvidia_l40s", "L40S"},
      {"p100", "P100"},
      {"tesla_p100-pcie-16gb", "P100"},
      {"k80", "K80"},
      {"rtx_2080_ti", "RTX-2080TI"},
      {"nvidia_geforce_rtx_2080_ti", "RTX-2080TI"},
  };
  for (const Case& c : cases) {
    const auto got = accelerator_for_gres_type(c.type);
    ASSERT_TRUE(got.has_value()) << c.type;
    EXPECT_EQ(*got, c.accelerator) << c.type;
    EXPECT_NE(find_accelerator(*got), nullptr) << c.type;
  }
}

TEST(SlurmGres, RefusesModelsTheCatalogLacksAndMigSlices) {
  for (const char* type : {"mi250", "amd_mi250x", "a40", "rtx_a6000", "a100_20gb", "v100_12g",
                           "nvidia_a100_3g.40gb", "1g.10gb", "", "_-_", "gpu", "a100x"}) {
    EXPECT_FALSE(accelerator_for_gres_type(type).has_value()) << type;
  }
}

TEST(SlurmGres, OverridesWinAndIgnoreCase) {
  const std::map<std::string, std::string> overrides = {
      {"A100", "A100-40GB"}, {"rtx_a6000", "l40s"}, {"typo", "NoSuchGpu"}};
  EXPECT_EQ(accelerator_for_gres_type("a100", overrides), "A100-40GB");
  EXPECT_EQ(accelerator_for_gres_type("RTX_A6000", overrides), "L40S");
  EXPECT_EQ(accelerator_for_gres_type("h100", overrides), "H100-80GB");
  EXPECT_FALSE(accelerator_for_gres_type("typo", overrides).has_value());
}

TEST(SlurmGres, HintNamesExamplesAndModels) {
  const std::string hint = known_gres_types_hint();
  EXPECT_NE(hint.find("nvidia_a100-sxm4-80gb"), std::string::npos);
  EXPECT_NE(hint.find("H100-80GB"), std::string::npos);
}

}  // namespace
}  // namespace trainyard::model
