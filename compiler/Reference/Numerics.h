// The one finiteness check both tools run: needle-run on what it computed, needlec on a probe
// of the model it is about to compile. Finite weights can still overflow float32 on the way (a
// norm gain of 3e38); such a model gives NaN from every compiled object, so needlec refuses it
// as needle-run does.
#pragma once

#include "Model/Model.h"
#include "Reference/Interpreter.h"

#include <string_view>

namespace needle::reference {

/// Fails, naming `source`, when the logits, the confidence or the embedding hold a NaN or an
/// infinity: a result nobody may read (it would print as invalid JSON and mislead).
void checkFinite(const Outputs &out, std::string_view source);

/// Runs the model of `weights` on one probe token (the first that is not the pad token) and
/// checkFinite's what it says: the model computes nothing finite when this fails. A model that
/// overflows only on some tokens is caught by needle-run on those tokens, not here.
void checkProbeFinite(const Weights &weights, std::string_view source);

} // namespace needle::reference
