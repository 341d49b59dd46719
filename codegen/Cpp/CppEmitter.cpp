#include "codegen/Cpp/CppEmitter.h"
#include "codegen/Lower/Fingerprint.h"
#include "codegen/Lower/KernelProgram.h"
#include "codegen/Select/Select.h"

#include "Support/Version.h"
#include "runtime/calls/calls.h"
#include "runtime/tokenizer/tokenizer.h"

#include <cctype>
#include <cstring>
#include <fmt/format.h>

namespace needle {

namespace {

// The runtime's source text (runtime/needle_runtime.h), carried into every emitted file; the
// tokenizer's (runtime/tokenizer/tokenizer.h), into those of models with a tokenizer; the
// tool-call automaton's (runtime/calls/calls.h), into those of models with tools or a schema.
const char kRuntimeSource[] =
#include "RuntimeSource.inc"
    ;
const char kTokenizerSource[] =
#include "TokenizerSource.inc"
    ;
const char kCallsSource[] =
#include "CallsSource.inc"
    ;

/// An exact float literal (hexadecimal), so the emitted value is bit for bit the IR's.
std::string floatLiteral(float value) { return fmt::format("{:a}f", value); }

/// A string literal of `bytes`, 128 bytes a line; every non-printable byte (and \, ", ?) as a
/// three-digit octal escape, so no following digit can extend it.
void appendStringLiteral(std::string &out, const std::vector<uint8_t> &bytes) {
  for (size_t line = 0; line < bytes.size() || line == 0; line += 128) {
    out += "    \"";
    for (size_t i = line; i < std::min(bytes.size(), line + 128); ++i) {
      const uint8_t c = bytes[i];
      if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"' && c != '?')
        out += static_cast<char>(c);
      else
        out += fmt::format("\\{:03o}", c);
    }
    out += "\"\n";
  }
}

template <typename T> std::string list(const std::vector<T> &values, std::string (*print)(T)) {
  std::string out;
  for (const T &value : values)
    out += print(value) + ", ";
  return out;
}

std::string integer(int64_t value) { return std::to_string(value); }

/// Prints a KernelProgram as C++: @step as calls into the embedded runtime.
class Printer {
public:
  Printer(const KernelProgram &program, std::string name) : program_(program), name_(std::move(name)) {}

  std::string source(const std::string &headerName);

private:
  std::string arg(const KernelArg &a);
  void printCall(const KernelCall &call, std::string &out);
  void printStage(const StepStage &stage);
  void printParallelStage(const StepStage &stage);
  std::string head(const std::string &name, const std::vector<KernelCall> &calls);
  std::string rung(const RungProgram &rung);
  std::string facts() const;
  std::string interface() const;
  std::string textInterface() const;
  std::string callsInterface() const;
  std::string routesInterface() const;  // NAME_call_top_k and NAME_call_rank (--route-tools)
  std::string recordsInterface() const; // NAME_extract, and NAME_call_probability for either

  const KernelProgram &program_;
  const RungProgram *rung_ = nullptr; // the one being printed
  std::string name_;
  std::string lists_, body_; // namespace-scope int64_t arrays; the body of step()
  std::string tasks_;        // the parallel stages' task functions, which step() hands to run_tasks
  int taskCount_ = 0;
  int listCount_ = 0, pointerListCount_ = 0;
  std::string pointerLists_; // local arrays the current call needs
  std::string indent_;       // of the current stage's calls
  bool perToken_ = false;    // whether the calls are token i's (else token 0's)
};

std::string Printer::arg(const KernelArg &a) {
  using Kind = KernelArg::Kind;
  switch (a.kind) {
  case Kind::Arena:
    if (perToken_ && a.value >= rung_->facts.outputsEnd)
      return fmt::format("a<{}>(arena, {}, i)", a.element, a.value);
    return fmt::format("a<{}>(arena, {})", a.element, a.value);
  case Kind::Weight:
    return fmt::format("w<{}>({})", a.element, a.value);
  case Kind::Codebook:
    return fmt::format("kCodebook{}", a.value);
  case Kind::Constant:
    return fmt::format("kConstant{}", a.value);
  case Kind::Int64List: {
    const std::string name = fmt::format("kList{}", listCount_++);
    lists_ += fmt::format("const int64_t {}[] = {{{}}};\n", name, list(a.ints, integer));
    return name;
  }
  case Kind::PointerList: {
    const std::string name = fmt::format("pointers{}", pointerListCount_++);
    std::string pointers;
    for (const KernelArg &pointer : a.pointers)
      pointers += arg(pointer) + ", ";
    pointerLists_ += fmt::format("{}  const {} *const {}[] = {{{}}};\n", indent_, a.element, name, pointers);
    return name;
  }
  case Kind::HeadScratch:
    return fmt::format("a<float>(scratch, {})", a.value);
  case Kind::HeadOutput:
    return "out";
  case Kind::Null:
    return "nullptr";
  case Kind::I32:
  case Kind::I64:
    return std::to_string(a.value);
  case Kind::F32:
    return floatLiteral(static_cast<float>(a.real));
  case Kind::F64:
    return fmt::format("{:a}", a.real);
  case Kind::Token:
    return "tokens[i]";
  case Kind::Position:
    return "t + i";
  case Kind::Count:
    return "n";
  }
  return "";
}

void Printer::printCall(const KernelCall &call, std::string &out) {
  size_t start = 0;
  for (size_t end; !call.comment.empty() && start <= call.comment.size(); start = end + 1) {
    end = std::min(call.comment.find('\n', start), call.comment.size());
    out += indent_ + "// " + call.comment.substr(start, end - start) + "\n";
  }
  if (call.kernel.empty())
    return;
  std::string args;
  for (const KernelArg &a : call.args)
    args += (args.empty() ? "" : ", ") + arg(a);
  const std::string line = fmt::format("needle_rt::{}({});\n", call.kernel, args);
  if (pointerLists_.empty()) {
    out += indent_ + line;
    return;
  }
  out += indent_ + "{\n" + pointerLists_ + indent_ + "  " + line + indent_ + "}\n";
  pointerLists_.clear();
}

/// A parallel stage: a function of its own that makes call `task` of the stage (or, for a loop
/// over the tokens, its calls for token `task`), on the step's arguments the context holds, and
/// one call of run_tasks in step() that runs them all.
void Printer::printParallelStage(const StepStage &stage) {
  using Kind = StepStage::Kind;
  if (taskCount_ == 0) // the first parallel stage: the context all of them share
    body_ += "  needle_rt::StepContext context = {arena, tokens, n, t};\n";
  const std::string name = fmt::format("task{}", taskCount_++);
  const bool tokens = stage.kind == Kind::EachToken;
  body_ += fmt::format("  needle_rt::run_tasks(arena, {}, &context, {});\n", name,
                       tokens ? "static_cast<uint32_t>(n)" : std::to_string(stage.calls.size()));
  perToken_ = stage.kind != Kind::Batched;
  tasks_ += fmt::format("void {}(void *step_context, uint32_t task) {{\n"
                        "  const auto &context = *static_cast<const needle_rt::StepContext *>(step_context);\n"
                        "  unsigned char *arena = context.arena;\n"
                        "  [[maybe_unused]] const int32_t *tokens = context.tokens;\n"
                        "  [[maybe_unused]] const int64_t n = context.n, t = context.t;\n",
                        name);
  if (tokens) {
    tasks_ += "  const int64_t i = task;\n";
    indent_ = "  ";
    for (const KernelCall &call : stage.calls)
      printCall(call, tasks_);
    tasks_ += "}\n\n";
    return;
  }
  if (perToken_)
    tasks_ += "  const int64_t i = n - 1;\n";
  tasks_ += "  switch (task) {\n";
  indent_ = "    ";
  for (size_t task = 0; task < stage.calls.size(); ++task) {
    tasks_ += fmt::format("  case {}:\n", task);
    printCall(stage.calls[task], tasks_);
    tasks_ += "    break;\n";
  }
  tasks_ += "  }\n}\n\n";
}

void Printer::printStage(const StepStage &stage) {
  using Kind = StepStage::Kind;
  if (stage.parallel)
    return printParallelStage(stage);
  perToken_ = stage.kind != Kind::Batched;
  if (stage.kind == Kind::EachToken)
    body_ += "  for (int64_t i = 0; i < n; ++i) {\n";
  else if (stage.kind == Kind::LastToken)
    body_ += "  { // only the last token's outputs are kept\n    [[maybe_unused]] const int64_t i = n - 1;\n";
  indent_ = perToken_ ? "    " : "  ";
  for (const KernelCall &call : stage.calls)
    printCall(call, body_);
  if (perToken_)
    body_ += "  }\n";
}

/// void name(const unsigned char *arena, float *out): a head's calls, on the arena (read only),
/// a scratch of the head's own on the stack, and out.
std::string Printer::head(const std::string &name, const std::vector<KernelCall> &calls) {
  std::string function = fmt::format("void {}(const unsigned char *arena, float *out) {{\n", name);
  function +=
      fmt::format("  alignas({}) unsigned char scratch[{}];\n", kWeightAlign, std::max<int64_t>(rung_->headScratch, 1));
  perToken_ = false;
  indent_ = "  ";
  for (const KernelCall &call : calls)
    printCall(call, function);
  return function + "}\n\n";
}

/// The stack NAME_encode takes at most for a tokenizer image (its splits recurse).
size_t encodeStackBytes(const std::vector<uint8_t> &tokenizer) {
  needle_rt::TokImage image;
  std::memcpy(&image, tokenizer.data(), sizeof image);
  return needle_rt::tok_encode_stack_bytes(image.split_count);
}

/// The header's part for a model with a tokenizer: the text functions.
std::string textHeader(const std::string &name, const std::vector<uint8_t> &tokenizer) {
  if (tokenizer.empty())
    return "";
  return fmt::format(R"(
/* Text: the compiled tokenizer (docs/c-interface.md). */
#define {0}_HAS_TOKENIZER 1
#define {0}_DECODER_BYTES {1} /* sizeof({0}_decoder), for static buffers */
#define {0}_ENCODE_STACK_BYTES {2} /* the most stack {0}_encode uses */
typedef struct {{
  unsigned char opaque[{0}_DECODER_BYTES];
}} {0}_decoder;

size_t {0}_encode_scratch_size(size_t len);
int {0}_encode(const char *text, size_t len, unsigned flags, void *scratch, size_t scratch_size, int32_t *ids,
               size_t cap, size_t *count);
int {0}_token_bytes(int32_t id, const char **bytes, size_t *len);
int32_t {0}_token_id(const char *text, size_t len);
void {0}_decoder_init({0}_decoder *d);
int {0}_decode_next({0}_decoder *d, int32_t id, char *out, size_t cap, size_t *len);
int {0}_decode_flush({0}_decoder *d, char *out, size_t cap, size_t *len);
)",
                     name, needle_rt::tok_decoder_bytes, encodeStackBytes(tokenizer));
}

/// The header's part for a model that routes among its tools (--route-tools).
std::string routesHeader(const std::string &name, const needle_rt::CallImage &calls, bool routes) {
  if (!routes)
    return "";
  return fmt::format(R"(
/* Routing among many tools (docs/c-interface.md). */
#define {0}_HAS_ROUTING 1
#define {0}_TOOL_COUNT {1} /* the tools of --tools, in the file's order */
int {0}_call_top_k({0}_session *s, const char *text, size_t len, float threshold, uint32_t top_k, char *out,
                   size_t cap, size_t *out_len, float *confidence);
int {0}_call_rank({0}_session *s, const char *text, size_t len, uint32_t *tools, size_t count);
)",
                     name, calls.tools);
}

/// The header's part for a model with tools: the tool-call automaton's functions.
std::string callsHeader(const std::string &name, const std::vector<uint8_t> &calls, bool routes) {
  if (calls.empty())
    return "";
  needle_rt::CallImage header;
  std::memcpy(&header, calls.data(), sizeof header);
  return fmt::format(R"(
/* Calls: the compiled tool-call automaton (docs/c-interface.md). */
#define {0}_HAS_CALLS 1
#ifndef NEEDLE_CALL_CODES
#define NEEDLE_CALL_CODES
enum {{ NEEDLE_NO_CALL = 1 }}; /* NAME_call: the confidence is under the threshold */
#endif

int {0}_call({0}_session *s, const char *text, size_t len, float threshold, char *out, size_t cap, size_t *out_len,
             float *confidence);
void {0}_call_begin({0}_call_state *state);
int {0}_call_mask(const {0}_call_state *state, size_t budget, uint32_t *bits);
int {0}_call_advance({0}_call_state *state, int32_t token);
int {0}_call_finished(const {0}_call_state *state);
)",
                     name) +
         routesHeader(name, header, routes);
}

/// The header's part for a model with a schema (--schema): the record automaton's functions.
std::string recordsHeader(const std::string &name, const std::vector<uint8_t> &records) {
  if (records.empty())
    return "";
  return fmt::format(R"(
/* Records: the compiled schema's automaton (docs/c-interface.md). */
#define {0}_HAS_EXTRACT 1
int {0}_extract({0}_session *s, const char *text, size_t len, char *out, size_t cap, size_t *out_len);
void {0}_extract_begin({0}_call_state *state);
int {0}_extract_mask(const {0}_call_state *state, size_t budget, uint32_t *bits);
int {0}_extract_advance({0}_call_state *state, int32_t token);
int {0}_extract_finished(const {0}_call_state *state);
)",
                     name);
}

/// The header's part for a model with tools or a schema: what calls and records share, before them.
std::string requestsHeader(const std::string &name, const KernelProgram &program) {
  const std::vector<uint8_t> &image = program.calls.empty() ? program.records : program.calls;
  if (image.empty())
    return "";
  needle_rt::CallImage header;
  std::memcpy(&header, image.data(), sizeof header);
  return fmt::format(R"(
/* What calls and records share (docs/c-interface.md). */
#define {0}_CALL_MASK_WORDS {1} /* ceil(vocab_size / 32): the uint32_t words of a mask */
#define {0}_MAX_QUERY {2} /* the longest text {0}_call and {0}_extract take, in bytes */
typedef struct {{
  uint32_t opaque[2];
}} {0}_call_state;

float {0}_call_probability(const {0}_session *s);
)",
                     name, header.words, header.max_query);
}

std::string header(const std::string &name, const KernelProgram &program) {
  // The name as it is (two models whose names differ in case keep two guards), behind a prefix no
  // system header's guard takes (theirs begin with an underscore).
  const std::string guard = "NEEDLE_MODEL_H_" + name;
  return fmt::format(
      R"(/* Generated by needlec {0}. The C interface of a compiled Needle model (docs/c-interface.md). */
#ifndef {1}
#define {1}

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {{
#endif

typedef struct {2}_session {2}_session; /* opaque, lives inside the caller's arena */
typedef struct {{
  uint32_t vocab_size, d_model, num_layers, max_seq_len, embedding_dim;
  const int32_t *source_blocks; /* [num_layers] original block ids */
  int32_t bos_id, eos_id;       /* the tokenizer's, or -1 */
  uint32_t stop_count;          /* the ids that end a generation */
  const int32_t *stop_ids;      /* [stop_count]; NULL when stop_count is 0 */
  uint32_t max_rollback;        /* needlec --max-rollback: tokens {2}_truncate takes back */
  uint32_t min_depth, max_depth; /* the depths a session may open at */
}} {2}_info_t;

#ifndef NEEDLE_STATUS_CODES
#define NEEDLE_STATUS_CODES
enum {{ NEEDLE_OK = 0, NEEDLE_ERR_ARENA = -1, NEEDLE_ERR_TOKEN = -2, NEEDLE_ERR_FULL = -3, NEEDLE_ERR_ARG = -4 }};
#endif
/* Guarded apart, so a header of an older needlec included first does not hide them. */
#ifndef NEEDLE_TEXT_CODES
#define NEEDLE_TEXT_CODES
enum {{ NEEDLE_ERR_SPACE = -5 }};                                  /* an output buffer too small */
enum {{ NEEDLE_ENCODE_SPECIAL = 1, NEEDLE_ENCODE_BOS_EOS = 2 }}; /* NAME_encode's flags */
#endif
#ifndef NEEDLE_SAMPLING
#define NEEDLE_SAMPLING
typedef struct {{
  float temperature;        /* <= 0: greedy; 1: the model's distribution */
  uint32_t top_k;           /* keep the k likeliest tokens; 0: all */
  float top_p;              /* keep the fewest likeliest whose probability reaches top_p; >= 1: all */
  float min_p;              /* keep tokens at least min_p times as likely as the likeliest; 0: all */
  float repetition_penalty; /* > 1 makes each token of `recent` less likely; 1: none */
  const int32_t *recent;    /* the tokens the penalty applies to (each once, however often) */
  size_t recent_count;
}} needle_sample_params;
typedef struct {{
  uint64_t state;
}} needle_rng; /* caller-owned; any value is a seed */
#endif
#ifndef NEEDLE_PARALLEL
#define NEEDLE_PARALLEL
typedef struct {{
  /* Calls fn(task, i) once for every i in [0, count), on any of the pool's threads (the calling
     one included), in any order or at once, and returns when all have returned. */
  void (*parallel_for)(void *pool, void (*fn)(void *task, uint32_t i), void *task, uint32_t count);
  void *pool;       /* parallel_for's first argument */
  uint32_t workers; /* the threads parallel_for runs tasks on; 0 or 1: no pool */
}} needle_parallel;
#endif

const {2}_info_t *{2}_info(void);
size_t {2}_arena_size(void);
size_t {2}_arena_align(void);
{2}_session *{2}_open(void *arena, size_t size);
{2}_session *{2}_restore(void *arena, size_t size);
void {2}_reset({2}_session *s);
int {2}_feed({2}_session *s, const int32_t *tokens, size_t n);
const float *{2}_logits(const {2}_session *s);
float {2}_confidence(const {2}_session *s);
int {2}_embedding(const {2}_session *s, float *out);
size_t {2}_position(const {2}_session *s);
int {2}_truncate({2}_session *s, size_t position);
size_t {2}_arena_size_depth(uint32_t depth);
{2}_session *{2}_open_depth(void *arena, size_t size, uint32_t depth);
uint32_t {2}_depth(const {2}_session *s);
int {2}_reopen_depth({2}_session *s, uint32_t depth);
int {2}_set_parallel({2}_session *s, const needle_parallel *p);
size_t {2}_sample_scratch_size(void);
int {2}_sample(const {2}_session *s, const needle_sample_params *params, needle_rng *rng, void *scratch,
               size_t scratch_size, int32_t *token);
{3}
#ifdef __cplusplus
}}
#endif

#endif /* {1} */
)",
      versionString(), guard, name,
      textHeader(name, program.tokenizer) + requestsHeader(name, program) +
          callsHeader(name, program.calls, program.routesTools) + recordsHeader(name, program.records));
}

/// Each rung's facts, by depth (needle_rt::Ladder), and what NAME_info describes: the deepest.
std::string Printer::facts() const {
  std::string text, facts, steps, confidenceHeads, embeddingHeads;
  for (const RungProgram &rung : program_.rungs) {
    const ModelFacts &f = rung.facts;
    const int64_t depth = f.numLayers;
    text += fmt::format("const int64_t kPools{}[] = {{{}}};\n", depth, list(f.pools, integer));
    facts += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}u, {}, {}, kPools{}, {}, {}}},\n", f.arenaSize,
                         f.arenaAlign, f.outputsEnd, f.maxSeqLen, f.vocabSize, f.embeddingDim, f.logits, f.batch,
                         floatLiteral(f.confidenceBias), f.fingerprint, f.maxRollback, f.pools.size() / 2, depth, depth,
                         f.tokenLog);
    steps += fmt::format("rung_{}::step, ", depth);
    confidenceHeads += fmt::format("rung_{}::confidence_head, ", depth);
    embeddingHeads += fmt::format("rung_{}::embedding_head, ", depth);
    // A 32-bit target cannot address a larger arena: its offsets would wrap and buffers alias.
    text += fmt::format("static_assert({1} <= PTRDIFF_MAX, \"{0}: the session arena needs {1} bytes, more than this "
                        "target addresses; lower max_seq_len with needlec --max-seq\");\n",
                        name_, f.arenaSize);
  }
  text += "constexpr needle_rt::ModelFacts kFacts[] = {\n" + facts + "};\n";
  text += "constexpr needle_rt::StepFunction kSteps[] = {" + steps + "};\n";
  text += "constexpr needle_rt::HeadFunction kConfidenceHeads[] = {" + confidenceHeads + "};\n";
  text += "constexpr needle_rt::HeadFunction kEmbeddingHeads[] = {" + embeddingHeads + "};\n";
  text += fmt::format("constexpr needle_rt::Ladder kLadder = {{{}, {}, kFacts, kSteps, kConfidenceHeads, "
                      "kEmbeddingHeads}};\n",
                      program_.rungs.front().facts.numLayers, program_.deepest().facts.numLayers);
  const ModelFacts &f = program_.deepest().facts;
  text += fmt::format("const int32_t kSourceBlocks[] = {{{}}};\n",
                      list(std::vector<int64_t>(f.sourceBlocks.begin(), f.sourceBlocks.end()), integer));
  if (!f.stopIds.empty())
    text += fmt::format("const int32_t kStopIds[] = {{{}}};\n",
                        list(std::vector<int64_t>(f.stopIds.begin(), f.stopIds.end()), integer));
  return text;
}

std::string Printer::interface() const {
  const ModelFacts &f = program_.deepest().facts;
  return fmt::format(
      R"(
namespace {{

{1}
/// The rung the session runs at (needle_rt::rung_of).
needle_rt::Rung rung(const void *s) {{ return needle_rt::rung_of(kLadder, s); }}

}} // namespace

extern "C" {{

const {0}_info_t *{0}_info(void) {{
  static const {0}_info_t info = {{{2}, {3}, {4}, {5}, {6}, kSourceBlocks, {7}, {8}, {9}u, {10}, {11}u, {12}u, {4}u}};
  return &info;
}}

size_t {0}_arena_size(void) {{ return needle_rt::ladder_arena_size(kLadder, kLadder.max_depth); }}

size_t {0}_arena_size_depth(uint32_t depth) {{ return needle_rt::ladder_arena_size(kLadder, depth); }}

size_t {0}_arena_align(void) {{ return kFacts[0].arena_align; }}

{0}_session *{0}_open(void *arena, size_t size) {{
  return static_cast<{0}_session *>(needle_rt::ladder_open(kLadder, arena, size, kLadder.max_depth));
}}

{0}_session *{0}_open_depth(void *arena, size_t size, uint32_t depth) {{
  return static_cast<{0}_session *>(needle_rt::ladder_open(kLadder, arena, size, depth));
}}

uint32_t {0}_depth(const {0}_session *s) {{ return needle_rt::ladder_depth(kLadder, s); }}

int {0}_reopen_depth({0}_session *s, uint32_t depth) {{ return needle_rt::ladder_reopen(kLadder, s, depth); }}

{0}_session *{0}_restore(void *arena, size_t size) {{
  return static_cast<{0}_session *>(needle_rt::ladder_restore(kLadder, arena, size));
}}

void {0}_reset({0}_session *s) {{ needle_rt::session_reset(rung(s).facts, s); }}

int {0}_feed({0}_session *s, const int32_t *tokens, size_t n) {{
  const needle_rt::Rung r = rung(s);
  return needle_rt::session_feed(r.facts, r.step, s, tokens, n);
}}

const float *{0}_logits(const {0}_session *s) {{ return needle_rt::session_logits(rung(s).facts, s); }}

float {0}_confidence(const {0}_session *s) {{
  const needle_rt::Rung r = rung(s);
  return needle_rt::session_confidence(r.facts, r.confidence_head, s);
}}

int {0}_embedding(const {0}_session *s, float *out) {{
  const needle_rt::Rung r = rung(s);
  return needle_rt::session_embedding(r.facts, r.embedding_head, s, out);
}}

size_t {0}_position(const {0}_session *s) {{ return needle_rt::session_position(rung(s).facts, s); }}

int {0}_truncate({0}_session *s, size_t position) {{
  return needle_rt::session_truncate(rung(s).facts, s, position);
}}

int {0}_set_parallel({0}_session *s, const needle_parallel *p) {{
  static_assert(sizeof(needle_parallel) == sizeof(needle_rt::Parallel), "needle_parallel is needle_rt::Parallel");
  return needle_rt::session_set_parallel(rung(s).facts, s, reinterpret_cast<const needle_rt::Parallel *>(p));
}}

size_t {0}_sample_scratch_size(void) {{ return needle_rt::sample_scratch_size(kFacts[0]); }}

int {0}_sample(const {0}_session *s, const needle_sample_params *params, needle_rng *rng, void *scratch,
               size_t scratch_size, int32_t *token) {{
  static_assert(sizeof(needle_sample_params) == sizeof(needle_rt::SampleParams) &&
                    sizeof(needle_rng) == sizeof(needle_rt::SampleRng),
                "needle_rt's sampling structs mirror the header's");
  return needle_rt::session_sample(rung(s).facts, s, reinterpret_cast<const needle_rt::SampleParams *>(params),
                                   reinterpret_cast<needle_rt::SampleRng *>(rng), scratch, scratch_size, token);
}}

}} // extern "C"
)",
      name_, facts(), f.vocabSize, f.dModel, f.numLayers, f.maxSeqLen, f.embeddingDim, f.bosId, f.eosId,
      f.stopIds.size(), f.stopIds.empty() ? "nullptr" : "kStopIds", f.maxRollback,
      program_.rungs.front().facts.numLayers);
}

std::string Printer::textInterface() const {
  if (program_.tokenizer.empty())
    return "";
  return fmt::format(R"(
namespace {{

needle_rt::TokTables tokenizer() {{ return needle_rt::tok_tables(kTokenizer); }}

needle_rt::TokDecoder *decoder({0}_decoder *d) {{ return reinterpret_cast<needle_rt::TokDecoder *>(d); }}

}} // namespace

extern "C" {{

size_t {0}_encode_scratch_size(size_t len) {{ return needle_rt::tok_encode_scratch_size(tokenizer(), len); }}

int {0}_encode(const char *text, size_t len, unsigned flags, void *scratch, size_t scratch_size, int32_t *ids,
               size_t cap, size_t *count) {{
  return needle_rt::tok_encode(tokenizer(), text, len, flags, scratch, scratch_size, ids, cap, count);
}}

int {0}_token_bytes(int32_t id, const char **bytes, size_t *len) {{
  return needle_rt::tok_token_bytes(tokenizer(), id, bytes, len);
}}

int32_t {0}_token_id(const char *text, size_t len) {{ return needle_rt::tok_token_id(tokenizer(), text, len); }}

void {0}_decoder_init({0}_decoder *d) {{ needle_rt::tok_decoder_init(tokenizer(), decoder(d)); }}

int {0}_decode_next({0}_decoder *d, int32_t id, char *out, size_t cap, size_t *len) {{
  return needle_rt::tok_decode_next(tokenizer(), decoder(d), id, out, cap, len);
}}

int {0}_decode_flush({0}_decoder *d, char *out, size_t cap, size_t *len) {{
  return needle_rt::tok_decode_flush(tokenizer(), decoder(d), out, cap, len);
}}

}} // extern "C"
)",
                     name_);
}

std::string Printer::callsInterface() const {
  if (program_.calls.empty())
    return "";
  return fmt::format(R"(
namespace {{

needle_rt::CallTables calls() {{ return needle_rt::call_tables(kCalls); }}

}} // namespace

extern "C" {{

int {0}_call({0}_session *s, const char *text, size_t len, float threshold, char *out, size_t cap, size_t *out_len,
             float *confidence) {{
  return needle_rt::session_call(rung(s), kTokenizer, kCalls, s, text, len, threshold, out, cap, out_len, confidence);
}}


void {0}_call_begin({0}_call_state *state) {{
  needle_rt::call_begin(calls(), reinterpret_cast<needle_rt::CallState *>(state));
}}

int {0}_call_mask(const {0}_call_state *state, size_t budget, uint32_t *bits) {{
  return needle_rt::call_mask(calls(), reinterpret_cast<const needle_rt::CallState *>(state), budget, bits);
}}

int {0}_call_advance({0}_call_state *state, int32_t token) {{
  return needle_rt::call_advance(calls(), reinterpret_cast<needle_rt::CallState *>(state), token);
}}

int {0}_call_finished(const {0}_call_state *state) {{
  return needle_rt::call_finished(calls(), reinterpret_cast<const needle_rt::CallState *>(state));
}}
{1}
}} // extern "C"
)",
                     name_, program_.routesTools ? routesInterface() : "");
}

/// NAME_call_top_k and NAME_call_rank, for a model that routes among its tools.
std::string Printer::routesInterface() const {
  return fmt::format(R"(
int {0}_call_top_k({0}_session *s, const char *text, size_t len, float threshold, uint32_t top_k, char *out,
                   size_t cap, size_t *out_len, float *confidence) {{
  return needle_rt::session_call_top_k(rung(s), kTokenizer, kCalls, s, text, len, threshold, top_k, out, cap, out_len,
                                       confidence);
}}

int {0}_call_rank({0}_session *s, const char *text, size_t len, uint32_t *tools, size_t count) {{
  return needle_rt::session_call_rank(rung(s), kTokenizer, kCalls, s, text, len, tools, count);
}}
)",
                     name_);
}

std::string Printer::recordsInterface() const {
  std::string functions;
  if (!program_.records.empty())
    functions += fmt::format(R"(
int {0}_extract({0}_session *s, const char *text, size_t len, char *out, size_t cap, size_t *out_len) {{
  return needle_rt::session_extract(rung(s), kTokenizer, kRecords, s, text, len, out, cap, out_len);
}}

void {0}_extract_begin({0}_call_state *state) {{
  needle_rt::call_begin(needle_rt::call_tables(kRecords), reinterpret_cast<needle_rt::CallState *>(state));
}}

int {0}_extract_mask(const {0}_call_state *state, size_t budget, uint32_t *bits) {{
  return needle_rt::call_mask(needle_rt::call_tables(kRecords), reinterpret_cast<const needle_rt::CallState *>(state),
                              budget, bits);
}}

int {0}_extract_advance({0}_call_state *state, int32_t token) {{
  return needle_rt::call_advance(needle_rt::call_tables(kRecords), reinterpret_cast<needle_rt::CallState *>(state),
                                 token);
}}

int {0}_extract_finished(const {0}_call_state *state) {{
  return needle_rt::call_finished(needle_rt::call_tables(kRecords),
                                  reinterpret_cast<const needle_rt::CallState *>(state));
}}
)",
                             name_);
  if (!program_.calls.empty() || !program_.records.empty())
    functions += fmt::format(R"(
float {0}_call_probability(const {0}_session *s) {{ return needle_rt::session_call_probability(rung(s).facts, s); }}
)",
                             name_);
  return functions.empty() ? "" : "\nextern \"C\" {\n" + functions + "\n} // extern \"C\"\n";
}

/// The rung's step and heads in a namespace of its own, rung_D for its depth D.
std::string Printer::rung(const RungProgram &rung) {
  rung_ = &rung;
  body_.clear();
  tasks_.clear();
  taskCount_ = 0;
  for (const StepStage &stage : rung.step)
    printStage(stage);
  const std::string heads = head("confidence_head", rung.confidenceHead) + head("embedding_head", rung.embeddingHead);
  std::string text = fmt::format("namespace rung_{} {{\n\n", rung.facts.numLayers);
  text += "template <typename T> T *a(unsigned char *arena, size_t offset) { return reinterpret_cast<T *>(arena + "
          "offset); }\n";
  text += "template <typename T> const T *a(const unsigned char *arena, size_t offset) {\n"
          "  return reinterpret_cast<const T *>(arena + offset);\n}\n";
  text += fmt::format("// Token i's copy of a scratch buffer.\n"
                      "template <typename T> T *a(unsigned char *arena, size_t offset, int64_t i) {{\n"
                      "  return reinterpret_cast<T *>(arena + offset + static_cast<size_t>(i) * {});\n}}\n\n",
                      rung.facts.tokenStride);
  if (!tasks_.empty())
    text += "// The parallel stages' tasks (docs/codegen.md, \"Parallel stages\"): task i makes the stage's call i.\n" +
            tasks_;
  text += "// tokens[0..n) at positions t..: @step, kernel by kernel, on buffers planned in the arena; a\n"
          "// loop over the tokens, the last token's outputs, or one call for all of them (docs/codegen.md).\n";
  text += "void step(unsigned char *arena, const int32_t *tokens, int64_t n, int64_t t) {\n" + body_ + "}\n\n";
  text += "// NAME_confidence's and NAME_embedding's heads, computed when asked from their pooling state.\n";
  text += heads;
  return text + fmt::format("}} // namespace rung_{}\n\n", rung.facts.numLayers);
}

std::string Printer::source(const std::string &headerName) {
  std::string rungs;
  for (const RungProgram &each : program_.rungs)
    rungs += rung(each);
  std::string data;
  for (const auto &[bits, values] : program_.codebooks)
    data += fmt::format("const float kCodebook{}[] = {{{}}};\n", bits, list(values, floatLiteral));
  for (size_t i = 0; i < program_.constants.size(); ++i)
    data += fmt::format("const float kConstant{}[] = {{{}}};\n", i, list(program_.constants[i], floatLiteral));

  const std::vector<uint8_t> &weights = program_.weights;
  std::string source = fmt::format("// Generated by needlec {}: {} blocks, {} bytes of weights. Do not edit.\n",
                                   versionString(), program_.deepest().facts.numLayers, weights.size());
  source += fmt::format("#include \"{}\"\n\n", headerName);
  // The runtime lives in a namespace of this model's own (its functions stay inline with
  // external linkage, so none is reported unused): models built by different needlec versions
  // link into one program without clashing over kernel definitions.
  // Its standard headers come first, so their include guards keep them out of the namespace.
  source += "#include <cmath>\n#include <cstddef>\n#include <cstdint>\n#include <cstring>\n#include <type_traits>\n"
            "#if defined(__x86_64__) && defined(__GNUC__)\n#include <immintrin.h>\n#endif\n"
            "#if defined(__aarch64__) && defined(__ARM_NEON)\n#include <arm_neon.h>\n#endif\n"
            "#if defined(__wasm__) && defined(__clang__)\n#include <wasm_simd128.h>\n#endif\n\n";
  source += fmt::format("namespace {}_runtime {{\n", name_);
  source += kRuntimeSource;
  if (!program_.tokenizer.empty())
    source += kTokenizerSource;
  if (!program_.calls.empty() || !program_.records.empty())
    source += kCallsSource;
  source += fmt::format("\n}} // namespace {}_runtime\n\nnamespace {{\n\n", name_);
  source += fmt::format("namespace needle_rt = {}_runtime::needle_rt;\n\n", name_);
  source += data + lists_ + "\n";
  source += "// The weights, read-only: packed CQ indices, fp16 norms, f32 and i32 tensors, 64-byte aligned.\n";
  source += fmt::format("alignas({}) const unsigned char kWeights[{}] =\n", kWeightAlign, weights.size() + 1);
  appendStringLiteral(source, weights);
  source += "    ;\n\n";
  if (!program_.tokenizer.empty()) {
    source += "// The tokenizer's tables: one image (needle_rt::TokImage), each array aligned for its elements.\n";
    source += fmt::format("alignas(16) const unsigned char kTokenizer[{}] =\n", program_.tokenizer.size() + 1);
    appendStringLiteral(source, program_.tokenizer);
    source += "    ;\n\n";
  }
  if (!program_.calls.empty()) {
    source += "// The tool-call automaton's tables: one image (needle_rt::CallImage).\n";
    source += fmt::format("alignas(16) const unsigned char kCalls[{}] =\n", program_.calls.size() + 1);
    appendStringLiteral(source, program_.calls);
    source += "    ;\n\n";
  }
  if (!program_.records.empty()) {
    source += "// The record automaton's tables (--schema): one image (needle_rt::CallImage).\n";
    source += fmt::format("alignas(16) const unsigned char kRecords[{}] =\n", program_.records.size() + 1);
    appendStringLiteral(source, program_.records);
    source += "    ;\n\n";
  }
  source +=
      "template <typename T> const T *w(size_t offset) { return reinterpret_cast<const T *>(kWeights + offset); }\n\n";
  source += rungs;
  source += "} // namespace\n";
  source += interface();
  source += textInterface();
  source += callsInterface();
  source += recordsInterface();
  return source;
}

} // namespace

CppModel emitCpp(KernelProgram program, const std::string &name, const std::string &headerName,
                 Activations activations) {
  selectKernels(program, {Backend::Cpp, {}, activations});
  const uint64_t fingerprint =
      modelFingerprint(program, fmt::format("cpp activations {}", static_cast<int>(activations)));
  for (RungProgram &rung : program.rungs)
    rung.facts.fingerprint = fingerprint;
  return {header(name, program), Printer(program, name).source(headerName)};
}

std::string emitHeader(const std::string &name, const KernelProgram &program) { return header(name, program); }

} // namespace needle
