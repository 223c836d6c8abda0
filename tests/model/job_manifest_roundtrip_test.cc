// Property: whatever the parser accepts comes back unchanged from its stored form. Specs built
// from adversarial text (backslashes, quotes, every control character YAML can carry, non-ASCII
// and line-separator code points, YAML and JSON syntax characters, every character class of
// names) near the size limits go parse -> job_manifest_to_json -> parse_stored_job_manifest and
// give an equal manifest; written as JSON by a client they mean the same as written in YAML.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/job_manifest.h"

namespace trainyard::model {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxArg = 131071;  // Linux's MAX_ARG_STRLEN less the NUL

// Pieces of hostile text, each valid UTF-8 without NUL.
const std::vector<std::string>& atoms() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out = {
        "\\",  "\"",  "'",      " ",      "  ",     "#",      ": ",     ":",      "- ",
        "-",   "{",   "}",      "[",      "]",      ",",      "&a",     "*a",     "!",
        "|",   ">",   "%",      "@",      "`",      "?",      "~",      "null",   "true",
        "0x1", "1e3", "-0",     "\n",     "\r",     "\r\n",   "\t",     "\x7f",   "é",
        "✓",   "😀",   "\u0085", "\u2028", "\u2029", "\ufeff", "\u00a0", "\u200b", "\\u0041",
        "\\n", "'''", "\"\"\"", "---",    "...",    "a"};
    for (int c = 1; c < 0x20; ++c) out.emplace_back(1, static_cast<char>(c));
    return out;
  }();
  return all;
}

// A YAML double-quoted scalar holding exactly `s`: escapes for what YAML cannot hold raw.
std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

class SpecMaker {
 public:
  explicit SpecMaker(uint32_t seed) : rng_(seed) {}

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  std::string text(size_t max_atoms) {
    std::string out;
    const size_t n = pick(max_atoms + 1);
    for (size_t i = 0; i < n; ++i) out += atoms()[pick(atoms().size())];
    return out;
  }

  // A string of `alphabet` characters, first and last from `edge` when given.
  std::string word(std::string_view alphabet, size_t min_len, size_t max_len,
                   std::string_view edge = "") {
    const size_t len = min_len + pick(max_len - min_len + 1);
    std::string out;
    for (size_t i = 0; i < len; ++i) {
      const bool at_edge = !edge.empty() && (i == 0 || i + 1 == len);
      const std::string_view from = at_edge ? edge : alphabet;
      out += from[pick(from.size())];
    }
    return out;
  }

  // The job as a client would send it, built as JSON so that it can also be written as YAML.
  Json spec() {
    constexpr std::string_view kLower = "abcdefghijklmnopqrstuvwxyz0123456789";
    constexpr std::string_view kAlnum =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const std::string name = "j" + word("abcdefghijklmnopqrstuvwxyz0123456789-.", 0, 61, kLower);
    Json labels = Json::object();
    for (size_t i = pick(4); i > 0; --i) {
      const std::string key = (pick(2) ? word("abcdefghij0123456789-.", 1, 30, kLower) + "/" : "") +
                              word(std::string(kAlnum) + "-_.", 1, 63, kAlnum);
      labels[key] = pick(3) == 0 ? "" : word(std::string(kAlnum) + "-_.", 1, 63, kAlnum);
    }
    Json env = Json::array();
    for (size_t i = pick(5); i > 0; --i) {
      env.push_back(
          {{"name", word("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789", 1, 20,
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") +
                        std::to_string(i)},
           {"value", text(12)}});
    }
    Json command = {text(6) + "x"};
    for (size_t i = pick(4); i > 0; --i) command.push_back(text(10));
    Json args = Json::array();
    for (size_t i = pick(6); i > 0; --i) args.push_back(text(10));
    Json limits = {{"nvidia.com/gpu",
                    pick(2) ? Json(pick(17)) : Json(static_cast<double>(1 + pick(999)) / 1000.0)},
                   {"cpu", fmt::format("{}m", pick(100000))},
                   {"memory", fmt::format("{}Mi", pick(100000))}};
    Json tmpl = {{"command", command}, {"args", args}, {"env", env}};
    if (pick(2)) tmpl["workingDir"] = "/" + text(8);
    tmpl["resources"] = {{"limits", limits}};
    Json spec = {{"team", word(std::string(kAlnum) + "-_.", 1, 63, kAlnum)},
                 {"priorityClass", std::vector<std::string>{"low", "normal", "high"}[pick(3)]},
                 {"workers", 1 + pick(1024)},
                 {"preemptible", pick(2) == 0},
                 {"backoffLimit", pick(101)},
                 {"dependsOn", Json::array({"dep-" + std::to_string(pick(9)), 1 + pick(1000000)})},
                 {"nodeSelector", {{"zone", word(std::string(kAlnum) + "-_.", 1, 63, kAlnum)}}},
                 {"checkpoint", {{"dir", "/" + text(8)}, {"gracePeriodSeconds", pick(3601)}}},
                 {"template", tmpl}};
    // A job array in Slurm's syntax, where the task names still fit in 63 characters.
    if (name.size() <= 56 && pick(3) == 0) {
      spec["array"] =
          std::vector<std::string>{"0-99%10", "1,3,5", "0-15:4", "7", "0-3,10-20:5%2"}[pick(5)];
    }
    return {{"apiVersion", "trainyard.dev/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"labels", labels}}},
            {"spec", spec}};
  }

 private:
  std::mt19937 rng_;
};

// The same document in YAML block style, every string double-quoted with escapes.
void write_yaml(const Json& j, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (j.is_object()) {
    if (j.empty()) {
      out += " {}\n";
      return;
    }
    out += "\n";
    for (const auto& [key, value] : j.items()) {
      out += pad + yaml_quoted(key) + ":";
      write_yaml(value, indent + 2, out);
    }
  } else if (j.is_array()) {
    if (j.empty()) {
      out += " []\n";
      return;
    }
    out += "\n";
    for (const Json& item : j) {
      out += pad + "-";
      write_yaml(item, indent + 2, out);
    }
  } else if (j.is_string()) {
    out += " " + yaml_quoted(j.get<std::string>()) + "\n";
  } else {
    out += " " + j.dump() + "\n";
  }
}

std::string to_yaml(const Json& j) {
  std::string out;
  write_yaml(j, 0, out);
  return out.substr(1);  // the leading newline of the root mapping
}

// Parses `text` as submitted and checks every way back: stored JSON, YAML, and (when it fits in
// a request) the stored JSON submitted again.
void expect_round_trips(const std::string& text, const std::string& what) {
  auto m = parse_job_manifest(text, "spec");
  ASSERT_TRUE(m.is_ok()) << what << ": " << m.status().message();
  const std::string json = job_manifest_to_json(*m);
  auto stored = parse_stored_job_manifest(json, "stored");
  ASSERT_TRUE(stored.is_ok()) << what << ": " << stored.status().message();
  EXPECT_TRUE(*stored == *m) << what;
  EXPECT_EQ(job_manifest_to_json(*stored), json) << what;
  if (json.size() <= (size_t{1} << 20)) {
    auto again = parse_job_manifest(json, "resubmitted");
    ASSERT_TRUE(again.is_ok()) << what << ": " << again.status().message();
    EXPECT_TRUE(*again == *m) << what;
  }
  const std::string yaml = job_manifest_to_yaml(*m);
  auto from_yaml = parse_stored_job_manifest(yaml, "yaml");
  ASSERT_TRUE(from_yaml.is_ok()) << what << ": " << from_yaml.status().message();
  EXPECT_TRUE(*from_yaml == *m) << what << "\n" << yaml.substr(0, 2000);
}

TEST(JobManifestRoundTrip, RandomHostileSpecsComeBackEqual) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SpecMaker maker(seed);
    const Json spec = maker.spec();
    const std::string yaml = to_yaml(spec);
    expect_round_trips(yaml, fmt::format("seed {} (YAML)", seed));
    if (::testing::Test::HasFatalFailure()) return;
    // A client's JSON body means the same as the YAML file.
    const std::string body = spec.dump(-1, ' ', false);
    auto from_json = parse_job_manifest(body, "body");
    auto from_yaml = parse_job_manifest(yaml, "file");
    ASSERT_TRUE(from_json.is_ok()) << seed << ": " << from_json.status().message();
    ASSERT_TRUE(from_yaml.is_ok()) << seed;
    EXPECT_TRUE(*from_json == *from_yaml) << "seed " << seed << "\n" << body;
  }
}

// One argument of each hostile piece of text and a variable half as long, in one spec each; for
// the pieces that escaping grows most the argument is as long as execve takes, and the stored
// form longer than a request may be.
TEST(JobManifestRoundTrip, ArgumentsAtTheSizeLimitComeBackEqual) {
  for (const std::string& atom : atoms()) {
    auto repeated = [&](size_t max_bytes) {
      std::string out;
      while (out.size() + atom.size() <= max_bytes) out += atom;
      return out;
    };
    // Full size for the pieces that grow most when escaped; the rest at 4 KiB keep it quick.
    const bool grows = atom == "\\" || atom == "\"" || atom == "\x01" || atom == "\x1f" ||
                       atom == "\n" || atom == "\t" || atom == "😀" || atom == "\u2028";
    const size_t size = grows ? kMaxArg : 4096;
    const std::string arg = repeated(size);
    Json env_var = {{"name", "V"}, {"value", repeated(size / 2)}};
    Json tmpl = {{"command", Json::array({"prog"})},
                 {"args", Json::array({arg})},
                 {"env", Json::array({env_var})}};
    Json spec = {{"apiVersion", "trainyard.dev/v1"},
                 {"kind", "Job"},
                 {"metadata", {{"name", "big"}}},
                 {"spec", {{"template", tmpl}}}};
    const std::string yaml = to_yaml(spec);
    ASSERT_LT(yaml.size(), size_t{1} << 20) << yaml_quoted(atom);
    expect_round_trips(yaml, "atom " + yaml_quoted(atom));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(JobManifestRoundTrip, ASpecNearOneMebibyteOfBackslashesAndQuotes) {
  // Seven arguments of 128 KiB: ~900 KB of input whose JSON form is ~1.8 MB.
  std::string args;
  for (int i = 0; i < 7; ++i) {
    args += "    - '" + std::string(kMaxArg - 200, i % 2 ? '\\' : '"') + "'\n";
  }
  const std::string yaml =
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: near-limit}\nspec:\n"
      "  template:\n    command: [prog]\n    args:\n" +
      args;
  ASSERT_LT(yaml.size(), size_t{1} << 20);
  auto m = parse_job_manifest(yaml, "spec");
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_GT(job_manifest_to_json(*m).size(), size_t{1} << 20);
  expect_round_trips(yaml, "near 1 MiB");
}

// The fuzz target's seeds: those the parser accepts round-trip like the rest.
TEST(JobManifestRoundTrip, FuzzSeedsThatParseComeBackEqual) {
  const std::filesystem::path dir =
      std::filesystem::path(TY_SOURCE_DIR) / "fuzz" / "corpus" / "fuzz_job_spec";
  int accepted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!parse_job_manifest(text.str(), "seed").is_ok()) continue;
    ++accepted;
    expect_round_trips(text.str(), entry.path().filename().string());
  }
  EXPECT_GE(accepted, 10);
}

}  // namespace
}  // namespace trainyard::model

namespace trainyard::model {
namespace {

// Python's json.dumps (and many JSON writers) spell characters beyond the BMP as surrogate
// pairs; yaml-cpp alone refuses them as "invalid unicode".
TEST(JobManifestJson, SurrogatePairEscapesReadAsTheirCharacters) {
  const std::string body =
      R"({"apiVersion": "trainyard.dev/v1", "kind": "Job", "metadata": {"name": "emoji"},
          "spec": {"template": {"command": ["echo", "launch \ud83d\ude80 \u00e9"],
                   "env": [{"name": "NOTE", "value": "\uD83D\uDE00"}]}}})";
  auto m = parse_job_manifest(body, "request");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->process.command[1], "launch \xF0\x9F\x9A\x80 \xC3\xA9");
  ASSERT_EQ(m->process.env.size(), 1u);
  EXPECT_EQ(m->process.env[0].second, "\xF0\x9F\x98\x80");
  auto back = parse_stored_job_manifest(job_manifest_to_json(*m), "store");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, *m);
  // A lone half of a pair is still refused, with the place.
  auto lone = parse_job_manifest(
      R"({"apiVersion": "trainyard.dev/v1", "kind": "Job", "metadata": {"name": "x"},
          "spec": {"template": {"command": ["echo", "\ud83d"]}}})",
      "request");
  ASSERT_FALSE(lone.is_ok());
  EXPECT_NE(lone.status().message().find("request:"), std::string::npos);
}

}  // namespace
}  // namespace trainyard::model
