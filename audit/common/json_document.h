// SPDX-License-Identifier: Apache-2.0
// Parsing a JSON document from a file the user gave (report, baseline, allowlist, shard, hook report,
// knowledge base, safetensors header, exported program) within fixed budgets of memory, depth and
// time. Every reader of such a file goes through parse_json_document.
//
// - Values. A parsed value costs nlohmann 16 bytes and more (a 40 MB array of zeros became 880 MB),
//   so the number of values is capped: far above any report the tool writes (a probe suite's is
//   about 10^5; an invariance report is bounded below it, audit/invariance/invariance_audit.cpp),
//   far below what a hostile file could otherwise claim.
// - Depth. nlohmann's parser is iterative, but copying or destroying a value recurses once per
//   level: 100,000 nested arrays overflowed the stack (SIGSEGV). No file the tool reads nests
//   deeper than a few dozen levels, so kMaxJsonDepth levels are read and a deeper document is
//   refused while parsing, before any value of that depth exists.
// - Time. nlohmann's own DOM builder inserts an ordered_json member by a linear search of the
//   members before it (ordered_map::emplace), quadratic in an object's width: 200,000 keys took
//   72 s, a safetensors header of 20,000 tensors minutes. JsonDocumentBuilder collects a container's
//   members in a vector and moves them into place when the container ends: each member is moved
//   once, never deep-copied when the vector grows. Duplicate keys are found with a hash index
//   (built once an object has more than a few members) and keep the last value at the first key's
//   place, as nlohmann and Python's json do. Read time is linear in the text (bench/json_read.sh).
// - Stop requests. The builder checks the stop flag (audit/common/stop.h) every few thousand values,
//   so SIGINT or SIGTERM interrupts a parse of any size within a fraction of a second.
#pragma once

#include "audit/common/errors.h"
#include "audit/common/stop.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ra {

inline constexpr int64_t kMaxJsonValues = int64_t{1} << 21;
// The deepest nesting read: a document whose containers nest deeper is refused (exit 3).
inline constexpr int kMaxJsonDepth = 256;

// Builds a document bottom-up from nlohmann's SAX events, enforcing the limits above.
template <typename Json>
class JsonDocumentBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit JsonDocumentBuilder(const std::string& what) : what_(what) {}

  Json take() { return std::move(root_); }

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool v) override { return add(Json(v)); }
  bool number_integer(typename Json::number_integer_t v) override { return add(Json(v)); }
  bool number_unsigned(typename Json::number_unsigned_t v) override { return add(Json(v)); }
  bool number_float(typename Json::number_float_t v, const typename Json::string_t&) override { return add(Json(v)); }
  bool string(typename Json::string_t& v) override { return add(Json(std::move(v))); }
  bool binary(typename Json::binary_t& v) override { return add(Json(std::move(v))); }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool key(typename Json::string_t& k) override {
    Frame& f = frames_.back();
    f.overwrite = f.find(k);
    if (f.overwrite == kNone) {
      f.members.emplace_back(std::move(k), Json());
      f.index_last();
    }
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  // nlohmann's parse_error or out_of_range (a number too large), of its own type, for the caller's message.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (const auto* p = dynamic_cast<const nlohmann::detail::parse_error*>(&e)) throw *p;
    if (const auto* o = dynamic_cast<const nlohmann::detail::out_of_range*>(&e)) throw *o;
    throw e;
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr std::size_t kLinearKeys = 8;  // objects this small are searched, not indexed

  struct Frame {
    bool object = false;
    std::vector<std::pair<typename Json::string_t, Json>> members;  // an object's
    std::vector<Json> items;                                        // an array's
    std::unique_ptr<std::unordered_map<typename Json::string_t, std::size_t>> index;
    std::size_t overwrite = kNone;  // a duplicate key's member, which the next value replaces

    std::size_t find(const typename Json::string_t& k) const {
      if (index) {
        const auto it = index->find(k);
        return it == index->end() ? kNone : it->second;
      }
      for (std::size_t i = 0; i < members.size(); ++i)
        if (members[i].first == k) return i;
      return kNone;
    }
    void index_last() {
      if (index) {
        index->emplace(members.back().first, members.size() - 1);
      } else if (members.size() > kLinearKeys) {
        index = std::make_unique<std::unordered_map<typename Json::string_t, std::size_t>>();
        for (std::size_t i = 0; i < members.size(); ++i) index->emplace(members[i].first, i);
      }
    }
  };

  bool count() {
    if (++values_ > kMaxJsonValues)
      throw InputError(
          fmt::format("{} holds more than {} JSON values, more than repro-audit reads", what_, kMaxJsonValues));
    if ((values_ & 4095) == 0) check_stop();
    return true;
  }

  bool add(Json v) {
    count();
    place(std::move(v));
    return true;
  }

  void place(Json v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return;
    }
    Frame& f = frames_.back();
    if (!f.object) {
      f.items.push_back(std::move(v));
    } else if (f.overwrite != kNone) {
      f.members[f.overwrite].second = std::move(v);
      f.overwrite = kNone;
    } else {
      f.members.back().second = std::move(v);
    }
  }

  bool open(bool object) {
    count();
    if (frames_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      throw InputError(
          fmt::format("{} nests JSON deeper than {} levels, more than repro-audit reads", what_, kMaxJsonDepth));
    frames_.emplace_back();
    frames_.back().object = object;
    return true;
  }

  bool close() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    Json v;
    if (f.object) {
      v = Json(Json::value_t::object);
      auto& o = v.template get_ref<typename Json::object_t&>();
      o = typename Json::object_t(std::make_move_iterator(f.members.begin()), std::make_move_iterator(f.members.end()));
    } else {
      v = Json(Json::value_t::array);
      v.template get_ref<typename Json::array_t&>() = std::move(f.items);
    }
    place(std::move(v));
    return true;
  }

  const std::string& what_;
  int64_t values_ = 0;
  std::vector<Frame> frames_;
  Json root_;
};

// Parses `text`; throws InputError naming `what` past kMaxJsonValues values or kMaxJsonDepth levels,
// ra::Interrupted on a stop request, and lets nlohmann's own exceptions (not JSON, a number too
// large) through for the caller's message.
template <typename Json>
Json parse_json_document(const std::string& text, const std::string& what) {
  JsonDocumentBuilder<Json> builder(what);
  Json::sax_parse(text, &builder);
  return builder.take();
}

}  // namespace ra
