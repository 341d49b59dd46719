// The fingerprint a compiled model writes into every session's header, so a saved session image
// is restored only into the model it came from (docs/c-interface.md, "Saving and restoring").
#pragma once

#include "codegen/Lower/KernelProgram.h"

#include <cstdint>
#include <string_view>

namespace needle {

/// FNV-1a over what decides a session's meaning: needlec's version, how the model is built
/// (`build`: the backend, target and kernel options, as the emitter spells them), the facts the
/// arena is planned from, the weights, the tokenizer and the tool-call automaton.
uint64_t modelFingerprint(const KernelProgram &program, std::string_view build);

} // namespace needle
