// fuzz-tools: a tools.json through parseTools, callLanguage and the byte and token automata
// (compiler/Calls), over a vocabulary of every ASCII byte and a few longer tokens; a file whose
// top level is an object is a --schema's JSON Schema, through recordLanguage. A file they accept
// must give an automaton whose shortest call or record, forced token by token by a budget of its
// length (runtime/calls/calls.h), finishes and is a text the byte automaton accepts.
#include "Calls/Schema.h"
#include "Calls/TokenAutomaton.h"
#include "FuzzHarness.h"
#include "Support/Json.h"

#include <string>
#include <vector>

using namespace needle;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  return fuzz::guarded([&] {
    const json::Value file = json::parse(text, "tools.json");
    const calls::LangPtr language = file.kind == json::Value::Kind::Object
                                        ? calls::recordLanguage(file, "schema.json")
                                        : calls::callLanguage(calls::parseTools(text, "tools.json"), "tools.json");
    const calls::ByteAutomaton bytes = calls::buildByteAutomaton(language, "tools.json");
    std::vector<std::optional<std::string>> vocabulary;
    for (int b = 0; b < 128; ++b)
      vocabulary.push_back(std::string(1, char(b)));
    for (const char *piece : {"{\"name\":\"", "\",\"arguments\":{", "\":", "\"}", "null", "true", "12"})
      vocabulary.push_back(std::string(piece));
    const calls::CompiledCalls compiled = calls::buildCallAutomaton(bytes, vocabulary, -1, {}, {}, "tools.json");
    const needle_rt::CallTables tables = calls::callTables(compiled.image);
    needle_rt::CallState state;
    needle_rt::call_begin(tables, &state);
    std::vector<uint32_t> bits(tables.header->words);
    size_t budget = tables.distances[tables.header->start];
    std::string call;
    int32_t at = 0; // the byte automaton's state after `call`
    for (; needle_rt::call_finished(tables, &state) == 0; --budget) {
      NEEDLE_FUZZ_CHECK(budget > 0);
      NEEDLE_FUZZ_CHECK(needle_rt::call_mask(tables, &state, budget, bits.data()) == needle_rt::status_ok);
      int32_t token = 0;
      while (!((bits[uint32_t(token) / 32] >> (uint32_t(token) % 32)) & 1u))
        ++token;
      NEEDLE_FUZZ_CHECK(needle_rt::call_advance(tables, &state, token) == needle_rt::status_ok);
      for (const char c : *vocabulary[size_t(token)])
        NEEDLE_FUZZ_CHECK((at = bytes.step(uint32_t(at), uint8_t(c))) >= 0);
      call += *vocabulary[size_t(token)];
    }
    NEEDLE_FUZZ_CHECK(budget == 0 && bytes.accepting[uint32_t(at)]);
  });
}
