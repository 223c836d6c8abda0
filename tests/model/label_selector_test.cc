#include "model/label_selector.h"

#include <gtest/gtest.h>

namespace trainyard::model {
namespace {

using Op = LabelRequirement::Op;

LabelSelector parse_ok(std::string_view text) {
  auto s = parse_label_selector(text);
  EXPECT_TRUE(s.is_ok()) << text << ": " << s.status().message();
  return s.is_ok() ? *s : LabelSelector{};
}

std::string error_of(std::string_view text) {
  auto s = parse_label_selector(text);
  EXPECT_FALSE(s.is_ok()) << text << " parsed";
  return s.is_ok() ? "" : s.status().message();
}

TEST(LabelSelector, ParsesEveryKubectlOperator) {
  const LabelSelector s = parse_ok("team=nlp, tier!=batch,gpu , !spot,stage==prod");
  ASSERT_EQ(s.requirements.size(), 5u);
  EXPECT_EQ(s.requirements[0].key, "team");
  EXPECT_EQ(s.requirements[0].op, Op::Equals);
  EXPECT_EQ(s.requirements[0].value, "nlp");
  EXPECT_EQ(s.requirements[1].op, Op::NotEquals);
  EXPECT_EQ(s.requirements[1].value, "batch");
  EXPECT_EQ(s.requirements[2].op, Op::Exists);
  EXPECT_EQ(s.requirements[2].key, "gpu");
  EXPECT_EQ(s.requirements[3].op, Op::NotExists);
  EXPECT_EQ(s.requirements[3].key, "spot");
  EXPECT_EQ(s.requirements[4].op, Op::Equals);
  EXPECT_EQ(s.requirements[4].value, "prod");
  EXPECT_EQ(s.to_string(), "team=nlp,tier!=batch,gpu,!spot,stage=prod");
}

TEST(LabelSelector, AcceptsPrefixedKeysAndEmptyValues) {
  const LabelSelector s = parse_ok("app.kubernetes.io/name=bert,owner=");
  ASSERT_EQ(s.requirements.size(), 2u);
  EXPECT_EQ(s.requirements[0].key, "app.kubernetes.io/name");
  EXPECT_EQ(s.requirements[1].value, "");
  EXPECT_TRUE(parse_ok("").requirements.empty());
}

TEST(LabelSelector, MatchesAsKubernetesDoes) {
  const Labels labels = {{"team", "nlp"}, {"tier", "batch"}};
  EXPECT_TRUE(parse_ok("team=nlp").matches(labels));
  EXPECT_FALSE(parse_ok("team=vision").matches(labels));
  EXPECT_FALSE(parse_ok("team=nlp,tier!=batch").matches(labels));
  EXPECT_TRUE(parse_ok("owner!=bob").matches(labels));  // absent key matches !=
  EXPECT_TRUE(parse_ok("tier").matches(labels));
  EXPECT_FALSE(parse_ok("owner").matches(labels));
  EXPECT_TRUE(parse_ok("!owner").matches(labels));
  EXPECT_FALSE(parse_ok("!team").matches(labels));
  EXPECT_TRUE(parse_ok("").matches(labels));
  EXPECT_TRUE(parse_ok("").matches({}));
}

TEST(LabelSelector, ErrorsNameTheTermAndTheRule) {
  EXPECT_NE(error_of("team=nlp,,x").find("term 2 is empty"), std::string::npos);
  EXPECT_NE(error_of("=nlp").find("term 1 '=nlp' has no key"), std::string::npos);
  const std::string bad_key = error_of("team=a,-bad=x");
  EXPECT_NE(bad_key.find("term 2"), std::string::npos) << bad_key;
  EXPECT_NE(bad_key.find("\"-bad\" is not a label key"), std::string::npos) << bad_key;
  const std::string bad_value = error_of("team=a b");
  EXPECT_NE(bad_value.find("\"a b\" is not a label value"), std::string::npos) << bad_value;
  EXPECT_NE(error_of("a=b=c").find("not a label value"), std::string::npos);
  EXPECT_NE(error_of("a!b").find("not a label key"), std::string::npos);
  EXPECT_NE(error_of("!").find("has no key"), std::string::npos);
  EXPECT_NE(error_of(std::string(64, 'k')).find("up to 63"), std::string::npos);
  EXPECT_FALSE(parse_label_selector("Upper.Case/name=x").is_ok());
}

TEST(LabelAssignment, ParsesKeyValueAndRejectsOthers) {
  auto ok = parse_label_assignment("team=nlp");
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(ok->first, "team");
  EXPECT_EQ(ok->second, "nlp");
  EXPECT_TRUE(parse_label_assignment("note=").is_ok());
  EXPECT_NE(parse_label_assignment("team").status().message().find("key=value"), std::string::npos);
  EXPECT_FALSE(parse_label_assignment("team=a b").is_ok());
  EXPECT_FALSE(parse_label_assignment("=x").is_ok());
}

}  // namespace
}  // namespace trainyard::model
