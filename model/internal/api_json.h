// Reading the API views' JSON (model/api_views.h) without exceptions: a FieldReader names the
// first field that is missing or of the wrong type by its path ("items[2].placement[0].gpu"), so
// a client can say which field of which reply was wrong. Used only by model/api_*_views.cc.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace trainyard::model::api_json {

using Json = nlohmann::json;

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsStringMap : std::false_type {};
template <typename T>
struct IsStringMap<std::map<std::string, T>> : std::true_type {};

// What a field of type T must be, for messages: "a string", "an integer", ...
template <typename T>
constexpr const char* kind_of() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_integral_v<T>) return "an integer";
  if constexpr (std::is_floating_point_v<T>) return "a number";
  if constexpr (IsVector<T>::value) return "an array";
  if constexpr (std::is_same_v<T, Json>) return "any JSON value";
  return "an object";
}

inline const char* kind_of_value(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number with a fraction";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "something else";
  }
}

class FieldReader;

// The fields of a view type, defined next to its writer (found by argument-dependent lookup).
// Each view V has `void read_fields(FieldReader&, V&)`.

class FieldReader {
 public:
  // `path` names `j` in messages ("" for the reply itself).
  FieldReader(const Json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail(path_, "an object", j_);
  }

  bool ok() const { return error_.empty(); }
  // InvalidArgument "field 'placement[0].gpu' is missing (expected an integer)" or "... is a
  // string, expected an integer"; ok when every field read so far was right.
  util::Status status() const { return ok() ? util::Status::ok() : util::invalid_argument(error_); }

  // A field that must be present and not null (a JSON-valued field may be null).
  template <typename T>
  FieldReader& required(const char* key, T& out) {
    if (const Json* v = find(key, kind_of<T>(), std::is_same_v<T, Json>)) read(*v, child(key), out);
    return *this;
  }
  // A field that must be present; null reads as nullopt.
  template <typename T>
  FieldReader& nullable(const char* key, std::optional<T>& out) {
    out.reset();
    const Json* v = find(key, kind_of<T>(), /*allow_null=*/true);
    if (v == nullptr || v->is_null()) return *this;
    read(*v, child(key), out.emplace());
    return *this;
  }
  // A field that may be absent (nullopt); when present it must be a T.
  template <typename T>
  FieldReader& optional(const char* key, std::optional<T>& out) {
    out.reset();
    if (!j_.is_object() || !j_.contains(key)) return *this;
    return required(key, out.emplace());
  }
  bool has(const char* key) const { return j_.is_object() && j_.contains(key); }
  const Json& json() const { return j_; }

  // Reads `v` (named `path`) into `out`; the first failure is kept.
  template <typename T>
  void read(const Json& v, const std::string& path, T& out) {
    if (!ok()) return;
    if constexpr (std::is_same_v<T, Json>) {
      out = v;
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) return fail(path, kind_of<T>(), v);
      out = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) return fail(path, kind_of<T>(), v);
      out = v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!fits<T>(v)) return fail(path, kind_of<T>(), v);
      out = v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>())
                                   : static_cast<T>(v.get<int64_t>());
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) return fail(path, kind_of<T>(), v);
      out = v.get<T>();
    } else if constexpr (IsVector<T>::value) {
      if (!v.is_array()) return fail(path, kind_of<T>(), v);
      out.clear();
      out.resize(v.size());
      for (size_t i = 0; i < v.size() && ok(); ++i)
        read(v[i], path + "[" + std::to_string(i) + "]", out[i]);
    } else if constexpr (IsStringMap<T>::value) {
      if (!v.is_object()) return fail(path, "an object", v);
      out.clear();
      for (const auto& [k, item] : v.items()) read(item, path + "." + k, out[k]);
    } else {
      FieldReader nested(v, path);
      if (nested.ok()) read_fields(nested, out);
      if (!nested.ok()) error_ = nested.error_;
    }
  }

  // Records a problem the caller found itself (a value out of its set, ...).
  void fail_value(const char* key, const std::string& problem) {
    if (ok()) error_ = "field '" + child(key) + "' " + problem;
  }

 private:
  std::string child(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  const Json* find(const char* key, const char* want, bool allow_null = false) {
    if (!ok()) return nullptr;
    const auto it = j_.find(key);
    if (it == j_.end()) {
      error_ = "field '" + child(key) + "' is missing (expected " + want + ")";
      return nullptr;
    }
    if (it->is_null() && !allow_null) {
      fail(child(key), want, *it);
      return nullptr;
    }
    return &*it;
  }

  template <typename T>
  static bool fits(const Json& v) {
    if (v.is_number_unsigned())
      return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    if (!v.is_number_integer()) return false;
    const int64_t x = v.get<int64_t>();
    return x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           static_cast<uint64_t>(std::max<int64_t>(x, 0)) <=
               static_cast<uint64_t>(std::numeric_limits<T>::max());
  }

  void fail(const std::string& path, const char* want, const Json& got) {
    if (!ok()) return;
    error_ = path.empty() ? std::string("the reply is ") + kind_of_value(got) + ", expected " + want
                          : "field '" + path + "' is " + kind_of_value(got) + ", expected " + want;
  }

  const Json& j_;
  std::string path_;
  std::string error_;
};

// Reads a whole reply into `out`: the from_json of a view is `return read_view(j, out);`.
template <typename View>
util::Status read_view(const Json& j, View& out) {
  FieldReader r(j, "");
  if (r.ok()) read_fields(r, out);
  return r.status();
}

// `v` as JSON, or null without one.
template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace trainyard::model::api_json
