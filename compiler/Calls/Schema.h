// The product's tools (a tools.json) and the JSON Schemas of their arguments, compiled to the
// call language (docs/tool-calls.md): a call is compact JSON {"name":"<tool>","arguments":{...}}
// whose arguments are valid against the tool's schema, keys in the schema's order, no
// whitespace. A schema keyword the language cannot express exactly is an error naming the
// keyword's path, never a wider language. No MLIR.
#pragma once

#include "Calls/Language.h"
#include "Support/Json.h"

#include <string>
#include <string_view>
#include <vector>

namespace needle::calls {

struct Tool {
  std::string name, description;
  json::Value parameters; // a JSON Schema of type object (Null: the tool takes no arguments)
  std::string path;       // where the schema is in its file, for errors: "[2].function.parameters"
};

/// The most tools, and the deepest nesting of schemas, a tools file may have.
inline constexpr size_t kMaxTools = 4096;
inline constexpr size_t kMaxDepth = 32;
/// The largest bound (minLength, maxLength, minItems, maxItems) the automaton unrolls.
inline constexpr uint64_t kMaxBound = 256;

/// Reads a tools.json: a list of {"type": "function", "function": {...}} or bare
/// {"name", "description", "parameters"}; errors name `source`.
std::vector<Tool> parseTools(std::string_view text, const std::string &source);

/// The bytes every call of `tool` begins with: {"name":"NAME","arguments": (no other tool's head
/// is a prefix of it: the name's closing quote ends it).
std::string callHead(const Tool &tool);

/// The text NAME_call_top_k embeds for `tool` (docs/tool-calls.md): "NAME: DESCRIPTION", or the
/// name alone when it has no description.
std::string routingText(const Tool &tool);

/// The language of one call of any of `tools`.
LangPtr callLanguage(const std::vector<Tool> &tools, const std::string &source);

/// The language of one value of `schema` (--schema's typed records); errors name `source` and the
/// keyword's path from the root, `$`.
LangPtr recordLanguage(const json::Value &schema, const std::string &source);

} // namespace needle::calls
