#include "Calls/Schema.h"

#include "Calls/ByteAutomaton.h"

#include "Support/Error.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace needle::calls {
namespace {

using json::Value;

LangPtr digit() { return byteRange('0', '9'); }
LangPtr digits(uint64_t n) { return repeat(digit(), n, n); }

/// Decimal strings of equal length from `from` to `to` (from <= to).
LangPtr digitsBetween(std::string_view from, std::string_view to) {
  if (from.empty())
    return seq({});
  const std::string_view fromRest = from.substr(1), toRest = to.substr(1);
  if (from[0] == to[0])
    return seq({byteRange(uint8_t(from[0]), uint8_t(from[0])), digitsBetween(fromRest, toRest)});
  const bool fromZeros = fromRest.find_first_not_of('0') == std::string_view::npos;
  const bool toNines = toRest.find_first_not_of('9') == std::string_view::npos;
  std::vector<LangPtr> parts;
  char low = from[0], high = to[0];
  if (!fromZeros) {
    parts.push_back(
        seq({byteRange(uint8_t(low), uint8_t(low)), digitsBetween(fromRest, std::string(fromRest.size(), '9'))}));
    ++low;
  }
  const char lastWhole = toNines ? high : char(high - 1);
  if (low <= lastWhole)
    parts.push_back(seq({byteRange(uint8_t(low), uint8_t(lastWhole)), digits(fromRest.size())}));
  if (!toNines)
    parts.push_back(
        seq({byteRange(uint8_t(high), uint8_t(high)), digitsBetween(std::string(toRest.size(), '0'), toRest)}));
  return alt(std::move(parts));
}

/// Naturals from `low` to `high` (none: no bound) as JSON writes them: no leading zero. The
/// naturals of one length sort as their texts do, so each length is one digitsBetween.
LangPtr naturals(uint64_t low, std::optional<uint64_t> high) {
  const size_t lowLength = std::to_string(low).size();
  const size_t highLength = high ? std::to_string(*high).size() : lowLength;
  std::vector<LangPtr> parts;
  for (size_t length = lowLength; length <= highLength; ++length) {
    const std::string first = length == lowLength ? std::to_string(low) : "1" + std::string(length - 1, '0');
    const std::string last = high && length == highLength ? std::to_string(*high) : std::string(length, '9');
    parts.push_back(digitsBetween(first, last));
  }
  if (!high) // every longer one
    parts.push_back(seq({byteRange('1', '9'), digits(lowLength), repeat(digit(), 0, kUnbounded)}));
  return alt(std::move(parts));
}

/// JSON integers from `low` to `high` (none: no bound), as 0|-?[1-9][0-9]*.
LangPtr integers(std::optional<int64_t> low, std::optional<int64_t> high) {
  std::vector<LangPtr> parts;
  if (!high || *high >= 0)
    parts.push_back(
        naturals(low && *low > 0 ? uint64_t(*low) : 0, high ? std::optional(uint64_t(*high)) : std::nullopt));
  if (!low || *low < 0) {
    const uint64_t nearest = high && *high < 0 ? uint64_t(-(*high + 1)) + 1 : 1; // |high|, without overflow
    parts.push_back(
        seq({literal("-"), low ? naturals(nearest, uint64_t(-(*low + 1)) + 1) : naturals(nearest, std::nullopt)}));
  }
  return alt(std::move(parts));
}

LangPtr number() {
  const LangPtr whole = alt({literal("0"), seq({byteRange('1', '9'), repeat(digit(), 0, kUnbounded)})});
  const LangPtr fraction = repeat(seq({literal("."), repeat(digit(), 1, kUnbounded)}), 0, 1);
  const LangPtr exponent =
      repeat(seq({alt({literal("e"), literal("E")}), repeat(alt({literal("+"), literal("-")}), 0, 1),
                  repeat(digit(), 1, kUnbounded)}),
             0, 1);
  return seq({repeat(literal("-"), 0, 1), whole, fraction, exponent});
}

/// Four hex digits that do not name a surrogate (D800-DFFF).
LangPtr nonSurrogate(const LangPtr &hex) {
  const LangPtr firstNotD =
      alt({digit(), byteRange('a', 'c'), byteRange('A', 'C'), byteRange('e', 'f'), byteRange('E', 'F')});
  return alt(
      {seq({firstNotD, hex, hex, hex}), seq({alt({literal("d"), literal("D")}), byteRange('0', '7'), hex, hex})});
}

/// One character of a JSON string: a code point in UTF-8 other than '"', '\' and the controls
/// below U+0020, or an escape; no \u escape of a surrogate (D800-DFFF), whose lone halves are
/// not text and which a call never needs (the code point is written in UTF-8).
LangPtr stringCharacter() {
  std::bitset<256> ascii;
  for (unsigned b = 0x20; b < 0x80; ++b)
    ascii.set(b);
  ascii.reset('"');
  ascii.reset('\\');
  const LangPtr tail = byteRange(0x80, 0xBF);
  const LangPtr hex = alt({digit(), byteRange('a', 'f'), byteRange('A', 'F')});
  return alt({
      byteSet(ascii),
      seq({byteRange(0xC2, 0xDF), tail}),
      seq({byteRange(0xE0, 0xE0), byteRange(0xA0, 0xBF), tail}),
      seq({alt({byteRange(0xE1, 0xEC), byteRange(0xEE, 0xEF)}), tail, tail}),
      seq({byteRange(0xED, 0xED), byteRange(0x80, 0x9F), tail}), // no surrogates
      seq({byteRange(0xF0, 0xF0), byteRange(0x90, 0xBF), tail, tail}),
      seq({byteRange(0xF1, 0xF3), tail, tail, tail}),
      seq({byteRange(0xF4, 0xF4), byteRange(0x80, 0x8F), tail, tail}),
      seq({literal("\\"), alt({byteSet([] {
                                 std::bitset<256> escaped;
                                 for (const char c : std::string_view("\"\\/bfnrt"))
                                   escaped.set(uint8_t(c));
                                 return escaped;
                               }()),
                               seq({literal("u"), nonSurrogate(hex)})})}),
  });
}

/// Compiles one schema and what it refers to; every error names the keyword's path.
class SchemaCompiler {
public:
  SchemaCompiler(const Value &root, std::string source) : root_(root), source_(std::move(source)) {}

  LangPtr value(const Value &schema, const std::string &path, size_t depth) {
    if (depth > kMaxDepth)
      error(path, "nested more than {} deep", kMaxDepth);
    if (schema.kind != Value::Kind::Object)
      error(path, "a schema must be an object, not {} (true/false schemas are not supported)",
            Value::kindName(schema.kind));
    for (const auto &[key, member] : schema.members)
      if (!known(key))
        error(path + "." + key, "the keyword is not supported (docs/tool-calls.md lists those that are)");
    if (const Value *ref = schema.find("$ref"))
      return reference(schema, *ref, path, depth);
    for (const std::string_view keyword : {"anyOf", "oneOf"})
      if (schema.find(keyword))
        return choice(schema, keyword, path, depth);
    if (schema.find("enum") || schema.find("const"))
      return enumeration(schema, path);
    return typed(schema, path, depth);
  }

private:
  template <typename... Args>
  [[noreturn]] void error(const std::string &path, fmt::format_string<Args...> format, Args &&...args) const {
    fail("{}: {}: {}", source_, path, fmt::format(format, std::forward<Args>(args)...));
  }

  static bool known(std::string_view key) {
    static const std::set<std::string_view> keys = {"type",
                                                    "properties",
                                                    "required",
                                                    "additionalProperties",
                                                    "enum",
                                                    "const",
                                                    "minLength",
                                                    "maxLength",
                                                    "minimum",
                                                    "maximum",
                                                    "exclusiveMinimum",
                                                    "exclusiveMaximum",
                                                    "minItems",
                                                    "maxItems",
                                                    "items",
                                                    "anyOf",
                                                    "oneOf",
                                                    "$ref",
                                                    "$defs",
                                                    "definitions",
                                                    "description",
                                                    "title",
                                                    "$comment",
                                                    "examples",
                                                    "default",
                                                    "$schema"};
    return keys.count(key) > 0;
  }

  /// Keywords that say what a value is, beyond annotations and definitions.
  static std::vector<std::string> assertions(const Value &schema) {
    static const std::set<std::string_view> notes = {"description", "title",   "$comment", "examples",
                                                     "default",     "$schema", "$defs",    "definitions"};
    std::vector<std::string> keys;
    for (const auto &[key, member] : schema.members)
      if (!notes.count(key))
        keys.push_back(key);
    return keys;
  }

  void alone(const Value &schema, std::string_view keyword, const std::string &path) const {
    for (const std::string &key : assertions(schema))
      if (key != keyword)
        error(path + "." + key, "not supported beside {}", keyword);
  }

  LangPtr reference(const Value &schema, const Value &ref, const std::string &path, size_t depth) {
    alone(schema, "$ref", path);
    if (ref.kind != Value::Kind::String)
      error(path + ".$ref", "must be a string");
    const std::string &target = ref.string;
    const Value *found = nullptr;
    for (const std::string_view prefix : {"#/$defs/", "#/definitions/"})
      if (target.starts_with(prefix))
        if (const Value *defs = root_.find(prefix.substr(2, prefix.size() - 3)))
          found = defs->find(std::string_view(target).substr(prefix.size()));
    if (!found)
      error(path + ".$ref", "\"{}\" is not a schema of the root's $defs (no other reference is supported)", target);
    if (std::find(refs_.begin(), refs_.end(), target) != refs_.end())
      error(path + ".$ref", "\"{}\" refers to itself: recursive schemas are not supported", target);
    if (const auto done = compiled_.find(target); done != compiled_.end())
      return done->second;
    refs_.push_back(target);
    LangPtr lang = value(*found, target.substr(2), depth + 1);
    refs_.pop_back();
    return compiled_[target] = lang;
  }

  LangPtr choice(const Value &schema, std::string_view keyword, const std::string &path, size_t depth) {
    alone(schema, keyword, path);
    const Value &choices = *schema.find(keyword);
    const std::string at = path + "." + std::string(keyword);
    if (choices.kind != Value::Kind::Array || choices.items.empty())
      error(at, "must be a list of at least one schema");
    std::vector<LangPtr> parts;
    for (size_t i = 0; i < choices.items.size(); ++i)
      parts.push_back(value(choices.items[i], fmt::format("{}[{}]", at, i), depth + 1));
    if (keyword == "oneOf")
      disjoint(parts, at);
    return alt(std::move(parts));
  }

  /// oneOf means exactly one: a value two branches take would be invalid, so the union of the
  /// branches is the language only when no two overlap.
  void disjoint(const std::vector<LangPtr> &parts, const std::string &at) const {
    std::vector<ByteAutomaton> automata;
    for (const LangPtr &part : parts)
      automata.push_back(buildByteAutomaton(part, source_));
    // A call's object has its keys in one order and no others; oneOf sees any order and the
    // properties a branch does not list, so branches that differ as texts may both hold a value.
    for (size_t i = 0; i < automata.size(); ++i)
      if (automata[i].step(0, '{') >= 0 || automata[i].step(0, '[') >= 0)
        error(at + fmt::format("[{}]", i),
              "oneOf of objects or arrays is not supported (a value could be valid under two branches); use anyOf");
    for (size_t i = 0; i < automata.size(); ++i)
      for (size_t j = i + 1; j < automata.size(); ++j)
        if (const auto both = commonText(automata[i], automata[j]))
          error(at,
                "branches {} and {} both take {}: a value valid under both is not valid under oneOf; use "
                "anyOf, or make them disjoint",
                i, j, *both);
  }

  /// enum or const (both: the values of both), each value as its compact JSON text.
  LangPtr enumeration(const Value &schema, const std::string &path) {
    for (const std::string &key : assertions(schema))
      if (key != "enum" && key != "const" && key != "type")
        error(path + "." + key, "not supported beside enum or const");
    if (schema.find("enum") && schema.find("const"))
      error(path + ".const", "not supported beside enum");
    const Value *list = schema.find("enum");
    const std::string at = path + (list ? ".enum" : ".const");
    if (list && (list->kind != Value::Kind::Array || list->items.empty()))
      error(at, "must be a list of at least one value");
    const std::vector<Value> values = list ? list->items : std::vector<Value>{*schema.find("const")};
    const std::vector<std::string> types = typeNames(schema, path);
    std::vector<LangPtr> parts;
    std::set<std::string> seen;
    for (const Value &v : values) {
      if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string &t) { return isA(v, t); }))
        error(at, "the value {} is not of the schema's type", json::serialize(v));
      if (std::string text = json::serialize(v); seen.insert(text).second)
        parts.push_back(literal(text));
    }
    return alt(std::move(parts));
  }

  static bool isA(const Value &v, std::string_view type) {
    using K = Value::Kind;
    return (type == "string" && v.kind == K::String) || (type == "boolean" && v.kind == K::Bool) ||
           (type == "null" && v.kind == K::Null) || (type == "object" && v.kind == K::Object) ||
           (type == "array" && v.kind == K::Array) || (type == "number" && v.kind == K::Number) ||
           (type == "integer" && v.kind == K::Number && std::trunc(v.number) == v.number);
  }

  std::vector<std::string> typeNames(const Value &schema, const std::string &path) const {
    const Value *type = schema.find("type");
    if (!type)
      return {};
    std::vector<const Value *> names;
    if (type->kind == Value::Kind::Array)
      for (const Value &item : type->items)
        names.push_back(&item);
    else
      names.push_back(type);
    std::vector<std::string> out;
    static const std::set<std::string_view> all = {"object", "array", "string", "integer", "number", "boolean", "null"};
    for (const Value *name : names) {
      if (name->kind != Value::Kind::String || !all.count(name->string))
        error(path + ".type", "{} is not a JSON Schema type", json::serialize(*name));
      if (std::find(out.begin(), out.end(), name->string) != out.end())
        error(path + ".type", "\"{}\" is listed twice", name->string);
      out.push_back(name->string);
    }
    if (out.empty())
      error(path + ".type", "must name at least one type");
    return out;
  }

  LangPtr typed(const Value &schema, const std::string &path, size_t depth) {
    const std::vector<std::string> types = typeNames(schema, path);
    if (types.empty())
      error(path, "a value of any type is not supported: give its type (or enum, const, anyOf, $ref)");
    for (const std::string &key : assertions(schema)) {
      // Beside "integer", a bound would hold the integers and leave the numbers unbounded.
      if (appliesTo(key, "integer") && std::find(types.begin(), types.end(), "number") != types.end())
        error(path + "." + key, "bounds on numbers are not supported, only on type \"integer\"");
      if (key != "type" &&
          std::none_of(types.begin(), types.end(), [&](const std::string &t) { return appliesTo(key, t); }))
        error(path + "." + key, "does not apply to type {}", json::serialize(*schema.find("type")));
    }
    std::vector<LangPtr> parts;
    for (const std::string &type : types)
      parts.push_back(ofType(schema, type, path, depth));
    return alt(std::move(parts));
  }

  static bool appliesTo(std::string_view key, std::string_view type) {
    if (type == "string")
      return key == "minLength" || key == "maxLength";
    if (type == "integer")
      return key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum";
    if (type == "object")
      return key == "properties" || key == "required" || key == "additionalProperties";
    if (type == "array")
      return key == "items" || key == "minItems" || key == "maxItems";
    return false;
  }

  LangPtr ofType(const Value &schema, std::string_view type, const std::string &path, size_t depth) {
    if (type == "null")
      return literal("null");
    if (type == "boolean")
      return alt({literal("true"), literal("false")});
    if (type == "number")
      return number();
    if (type == "integer")
      return integer(schema, path);
    if (type == "string") {
      const auto [low, high] = bounds(schema, "minLength", "maxLength", path);
      return seq({literal("\""), repeat(stringCharacter(), low, high), literal("\"")});
    }
    if (type == "array")
      return array(schema, path, depth);
    return object(schema, path, depth);
  }

  /// A non-negative integer keyword's value, or none when absent.
  std::optional<uint64_t> count(const Value &schema, std::string_view key, const std::string &path) const {
    const Value *v = schema.find(key);
    if (!v)
      return std::nullopt;
    if (v->kind != Value::Kind::Number || !v->isInteger || v->integer < 0)
      error(path + "." + std::string(key), "must be a non-negative integer");
    if (uint64_t(v->integer) > kMaxBound)
      error(path + "." + std::string(key), "{} is more than the {} the automaton supports", v->integer, kMaxBound);
    return uint64_t(v->integer);
  }

  std::pair<uint64_t, uint64_t> bounds(const Value &schema, std::string_view minKey, std::string_view maxKey,
                                       const std::string &path) const {
    const uint64_t low = count(schema, minKey, path).value_or(0);
    const std::optional<uint64_t> high = count(schema, maxKey, path);
    if (high && low > *high)
      error(path + "." + std::string(minKey), "{} is more than {} {}", low, maxKey, *high);
    return {low, high.value_or(kUnbounded)};
  }

  std::optional<int64_t> limit(const Value &schema, std::string_view key, const std::string &path,
                               int direction) const {
    const Value *v = schema.find(key);
    if (!v)
      return std::nullopt;
    if (v->kind != Value::Kind::Number)
      error(path + "." + std::string(key), "must be a number");
    const bool exclusive = key.starts_with("exclusive");
    const auto beyond = [&] {
      error(path + "." + std::string(key), "{} is beyond the 64-bit integers the automaton supports",
            json::serialize(*v));
    };
    if (v->isInteger) { // exact, where a double would round 9007199254740993
      if (exclusive && v->integer == (direction > 0 ? INT64_MAX : INT64_MIN))
        beyond();
      return exclusive ? v->integer + direction : v->integer;
    }
    // The nearest integer on the allowed side of a fraction (or of a number written with one).
    const double edge = direction > 0 ? std::ceil(v->number) : std::floor(v->number);
    if (edge <= -9.2e18 || edge >= 9.2e18)
      beyond();
    const int64_t bound = int64_t(edge);
    return exclusive && double(bound) == v->number ? bound + direction : bound;
  }

  LangPtr integer(const Value &schema, const std::string &path) {
    std::optional<int64_t> low = limit(schema, "minimum", path, 1), high = limit(schema, "maximum", path, -1);
    if (const auto exclusive = limit(schema, "exclusiveMinimum", path, 1))
      low = low ? std::max(*low, *exclusive) : *exclusive;
    if (const auto exclusive = limit(schema, "exclusiveMaximum", path, -1))
      high = high ? std::min(*high, *exclusive) : *exclusive;
    if (low && high && *low > *high)
      error(path, "no integer lies between the minimum and the maximum");
    return integers(low, high);
  }

  LangPtr array(const Value &schema, const std::string &path, size_t depth) {
    const Value *items = schema.find("items");
    if (!items)
      error(path, "an array needs items (a schema for every element)");
    const auto [low, high] = bounds(schema, "minItems", "maxItems", path);
    return seq(
        {literal("["), repeat(value(*items, path + ".items", depth + 1), low, high, literal(",")), literal("]")});
  }

  LangPtr object(const Value &schema, const std::string &path, size_t depth) {
    if (const Value *extra = schema.find("additionalProperties"); extra && extra->kind != Value::Kind::Bool)
      error(path + ".additionalProperties", "only false is supported: a call has only the properties listed");
    else if (extra && extra->boolean)
      error(path + ".additionalProperties", "only false is supported: a call has only the properties listed");
    std::vector<LangPtr> parts;
    std::vector<std::string> names;
    if (const Value *properties = schema.find("properties")) {
      if (properties->kind != Value::Kind::Object)
        error(path + ".properties", "must be an object");
      for (const auto &[name, property] : properties->members) {
        std::string key;
        json::appendQuoted(key, name);
        parts.push_back(seq({literal(key + ":"), value(property, path + ".properties." + name, depth + 1)}));
        names.push_back(name);
      }
    }
    std::vector<bool> required(names.size(), false);
    if (const Value *list = schema.find("required")) {
      if (list->kind != Value::Kind::Array)
        error(path + ".required", "must be a list of property names");
      for (const Value &name : list->items) {
        const auto at = std::find(names.begin(), names.end(), name.string);
        if (name.kind != Value::Kind::String || at == names.end())
          error(path + ".required", "{} is not one of the properties", json::serialize(name));
        required[size_t(at - names.begin())] = true;
      }
    }
    return seq({literal("{"), members(std::move(parts), std::move(required), literal(",")), literal("}")});
  }

  const Value &root_;
  std::string source_;
  std::vector<std::string> refs_;           // the references being compiled, outermost first
  std::map<std::string, LangPtr> compiled_; // each reference's language, once
};

std::string text(const Value &object, std::string_view key, const std::string &path, const std::string &source) {
  const Value *v = object.find(key);
  if (!v)
    return {};
  if (v->kind != Value::Kind::String)
    fail("{}: {}.{}: must be a string", source, path, key);
  return v->string;
}

} // namespace

std::vector<Tool> parseTools(std::string_view fileText, const std::string &source) {
  const Value file = json::parse(fileText, source);
  if (file.kind != Value::Kind::Array)
    fail("{}: must be a list of tools", source);
  if (file.items.empty())
    fail("{}: lists no tool", source);
  if (file.items.size() > kMaxTools)
    fail("{}: lists {} tools, more than the {} supported", source, file.items.size(), kMaxTools);
  std::vector<Tool> tools;
  std::set<std::string> names;
  for (size_t i = 0; i < file.items.size(); ++i) {
    std::string path = fmt::format("[{}]", i);
    const Value *entry = &file.items[i];
    if (entry->kind != Value::Kind::Object)
      fail("{}: {}: a tool must be an object", source, path);
    if (const Value *function = entry->find("function")) {
      if (const std::string type = text(*entry, "type", path, source); type != "function")
        fail("{}: {}.type: must be \"function\" beside \"function\"", source, path);
      for (const auto &[key, member] : entry->members)
        if (key != "type" && key != "function")
          fail("{}: {}.{}: unknown field of a tool", source, path, key);
      entry = function;
      path += ".function";
      if (entry->kind != Value::Kind::Object)
        fail("{}: {}: must be an object", source, path);
    }
    for (const auto &[key, member] : entry->members)
      if (key != "name" && key != "description" && key != "parameters" && key != "strict")
        fail("{}: {}.{}: unknown field of a tool", source, path, key);
    Tool tool{text(*entry, "name", path, source), text(*entry, "description", path, source), {}, path + ".parameters"};
    if (tool.name.empty())
      fail("{}: {}.name: a tool needs a name", source, path);
    if (!names.insert(tool.name).second)
      fail("{}: {}.name: \"{}\" names two tools", source, path, tool.name);
    if (const Value *parameters = entry->find("parameters"))
      tool.parameters = *parameters;
    tools.push_back(std::move(tool));
  }
  return tools;
}

std::string callHead(const Tool &tool) {
  std::string head = "{\"name\":";
  json::appendQuoted(head, tool.name);
  return head + ",\"arguments\":";
}

std::string routingText(const Tool &tool) {
  return tool.description.empty() ? tool.name : tool.name + ": " + tool.description;
}

LangPtr callLanguage(const std::vector<Tool> &tools, const std::string &source) {
  std::vector<LangPtr> calls;
  for (const Tool &tool : tools) {
    LangPtr arguments = literal("{}");
    if (tool.parameters.kind != Value::Kind::Null) {
      const Value *type = tool.parameters.find("type");
      if (tool.parameters.kind != Value::Kind::Object || !type || type->kind != Value::Kind::String ||
          type->string != "object")
        fail("{}: {}: the arguments must be an object: give \"type\": \"object\"", source, tool.path);
      arguments = SchemaCompiler(tool.parameters, source).value(tool.parameters, tool.path, 0);
    }
    calls.push_back(seq({literal(callHead(tool)), arguments, literal("}")}));
  }
  return alt(std::move(calls));
}

LangPtr recordLanguage(const Value &schema, const std::string &source) {
  return SchemaCompiler(schema, source).value(schema, "$", 0);
}

} // namespace needle::calls
