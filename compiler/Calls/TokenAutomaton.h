// The call automaton over the model's tokens (docs/tool-calls.md): for each state of the byte
// automaton, the tokens whose bytes keep the output a valid prefix of a call, the state each
// leads to, and how few tokens can still finish the call; stored as the image the runtime reads
// (runtime/calls/calls.h). No MLIR.
#pragma once

#include "Calls/ByteAutomaton.h"
#include "runtime/calls/calls.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace needle::calls {

struct CallTablesFigures {
  uint32_t states = 0, bitsets = 0, groups = 0, edges = 0;
  uint64_t bytes = 0;
};

/// What NAME_call needs beside the automaton: the prompt around the query as ids, and how long a
/// query may be (in bytes, and in ids), with the encoder's scratch for the longest.
struct CallPrompt {
  std::vector<int32_t> prefix, suffix;
  uint32_t maxQuery = 0, maxQueryIds = 0;
  uint64_t encodeScratch = 0;
};

/// What NAME_call_top_k routes by (docs/tool-calls.md, "Routing among many tools"): each tool's
/// head, the bytes its calls begin with, and its unit embedding at each depth from minDepth on
/// (depth-major, then tool, then embedding_dim floats). No heads: no routing (a record automaton).
struct CallRoutes {
  std::vector<std::string> heads;
  uint32_t embeddingDim = 0, minDepth = 0, depths = 0;
  std::vector<float> embeddings;
};

struct CompiledCalls {
  std::vector<uint8_t> image; // needle_rt::CallImage and its arrays
  CallTablesFigures figures;
  uint64_t scratchBytes = 0; // what NAME_call keeps at the end of the session's arena
  uint32_t shortestCall = 0; // the fewest tokens a call takes, its end token included
};

/// The call automaton of `bytes` over a vocabulary of `tokens.size()` ids: each id's bytes in a
/// text, none for an id that never appears in a call (special tokens, unused ids). `endToken`
/// (-1: none) must follow a whole call, and is never part of its text; without one the call ends
/// where its JSON does, which needs a language in which no whole value is the prefix of another.
/// Errors name `source`.
/// `prompt` and `routes` are carried into the image for NAME_call and NAME_call_top_k.
CompiledCalls buildCallAutomaton(const ByteAutomaton &bytes, const std::vector<std::optional<std::string>> &tokens,
                                 int32_t endToken, const CallPrompt &prompt, const CallRoutes &routes,
                                 const std::string &source);

/// The runtime's view of an image that buildCallAutomaton made (8-byte aligned).
inline needle_rt::CallTables callTables(const std::vector<uint8_t> &image) {
  return needle_rt::call_tables(image.data());
}

} // namespace needle::calls
