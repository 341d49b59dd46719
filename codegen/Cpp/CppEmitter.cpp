#include "codegen/Cpp/CppEmitter.h"
#include "codegen/Transforms/SessionNeeds.h"

#include "Import/WeightBinding.h"
#include "Needle/IR/NeedleDialect.h"
#include "Support/Error.h"
#include "Support/RoundUp.h"
#include "Support/Version.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cctype>
#include <cstring>
#include <map>

using namespace mlir;
using namespace needle::ir;

namespace needle {

namespace {

// The runtime's source text (runtime/needle_runtime.h), carried into every emitted file.
const char kRuntimeSource[] =
#include "RuntimeSource.inc"
    ;

constexpr int64_t kBlobAlign = 64;

int64_t lengthOf(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(0); }
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// An exact float literal (hexadecimal), so the emitted value is bit for bit the IR's.
std::string floatLiteral(float value) { return fmt::format("{:a}f", value); }

/// The model's weights as one read-only blob, each tensor 64-byte aligned.
class WeightBlob {
public:
  int64_t add(const void *data, size_t bytes) {
    bytes_.resize(roundUp(static_cast<int64_t>(bytes_.size()), kBlobAlign), 0);
    const int64_t offset = static_cast<int64_t>(bytes_.size());
    const auto *begin = static_cast<const uint8_t *>(data);
    bytes_.insert(bytes_.end(), begin, begin + bytes);
    return offset;
  }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

private:
  std::vector<uint8_t> bytes_;
};

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

class Emitter {
public:
  Emitter(ModuleOp module, const Model &model, std::string name)
      : module_(module), model_(model), binding_(model), name_(std::move(name)) {}

  CppModel run(const std::string &headerName);

private:
  // Operands as C++ expressions.
  std::string ref(Value v);
  std::string arena(int64_t offset, const char *type = "float") {
    return fmt::format("a<{}>(arena, {})", type, offset);
  }
  int64_t bufferOf(Value v);
  std::string weight(Value v, const char *type = "float");
  struct Cq {
    std::string packed, norms, codebook;
    int bits;
    int64_t rows, cols;
  };
  Cq cq(Value v);
  std::string constant(arith::ConstantOp op);
  std::pair<int64_t, int64_t> slot(Operation *op, StringRef attr);

  void emitBlock(Block &block);
  void emitOp(Operation &op);
  void emitHead(HeadOp op);
  void line(const std::string &text) { body_ += "  " + text + "\n"; }

  std::string header() const;
  std::string interface() const;

  ModuleOp module_;
  const Model &model_;
  WeightBinding binding_;
  std::string name_;
  WeightBlob blob_;
  std::map<std::string, int64_t> weightOffsets_; // by tensor name and head rows
  std::string constants_, body_;
  int constantCount_ = 0;
  llvm::DenseMap<Operation *, std::string> constantNames_;
  int64_t logits_ = 0, confidence_ = 0, embedding_ = 0;
  int64_t maxSeqLen_ = 0; // the plan's: it sized the KV rings
};

int64_t Emitter::bufferOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto block = dyn_cast<BlockOp>(arg.getOwner()->getParentOp());
    if (!block || arg.getArgNumber() != 0)
      fail("--emit cpp: internal: a tensor block argument outside needle.block");
    return bufferOf(block.getLanes());
  }
  auto buffers = v.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>("needle.buffers");
  if (!buffers)
    fail("--emit cpp: {} has no arena buffer; run needle-plan-session first",
         v.getDefiningOp()->getName().getStringRef().str());
  return buffers[cast<OpResult>(v).getResultNumber()];
}

std::string Emitter::ref(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto block = dyn_cast<BlockOp>(arg.getOwner()->getParentOp()))
      return ref(block->getOperand(arg.getArgNumber()));
    if (!isa<IntegerType>(v.getType()))
      fail("--emit cpp: @step may take only the token and the position");
    return arg.getArgNumber() == 0 ? "token" : "t";
  }
  Operation *def = v.getDefiningOp();
  if (isa<WeightOp>(def))
    return weight(v);
  if (auto op = dyn_cast<arith::ConstantOp>(def))
    return constant(op);
  return arena(bufferOf(v));
}

std::string Emitter::weight(Value v, const char *type) {
  auto op = v.getDefiningOp<WeightOp>();
  std::string key = binding_.tensorName(op);
  if (op.getRows())
    for (int64_t row : op.getRowsAttr().asArrayRef())
      key += fmt::format(",{}", row);
  auto [it, inserted] = weightOffsets_.try_emplace(key, 0);
  if (inserted) {
    if (cast<RankedTensorType>(op.getType()).getElementType().isInteger(32)) {
      const std::vector<int32_t> ints = binding_.ints(op);
      it->second = blob_.add(ints.data(), ints.size() * sizeof(int32_t));
    } else {
      const std::vector<float> floats = binding_.floats(op);
      it->second = blob_.add(floats.data(), floats.size() * sizeof(float));
    }
  }
  return fmt::format("w<{}>({})", type, it->second);
}

Emitter::Cq Emitter::cq(Value v) {
  auto op = v.getDefiningOp<WeightOp>();
  if (!op)
    fail("--emit cpp: a CQ operand must come from needle.weight");
  const Tensor &t = binding_.tensor(op);
  const std::string name = binding_.tensorName(op);
  auto [it, inserted] = weightOffsets_.try_emplace(name, 0);
  if (inserted) {
    it->second = blob_.add(t.packed.data(), t.packed.size());
    blob_.add(t.norms.data(), t.norms.size() * sizeof(uint16_t));
  }
  const int64_t normsOffset = roundUp(it->second + static_cast<int64_t>(t.packed.size()), kBlobAlign);
  return {fmt::format("w<uint8_t>({})", it->second),
          fmt::format("w<uint16_t>({})", normsOffset),
          fmt::format("kCodebook{}", t.bits),
          t.bits,
          t.rows(),
          t.cols()};
}

std::string Emitter::constant(arith::ConstantOp op) {
  auto [it, inserted] = constantNames_.try_emplace(op, fmt::format("kConstant{}", constantCount_));
  if (!inserted)
    return it->second;
  ++constantCount_;
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense || !dense.getElementType().isF32())
    fail("--emit cpp: only f32 tensor constants are supported");
  constants_ += fmt::format("const float {}[] = {{", it->second);
  for (float value : dense.getValues<float>())
    constants_ += floatLiteral(value) + ", ";
  constants_ += "};\n";
  return it->second;
}

std::pair<int64_t, int64_t> Emitter::slot(Operation *op, StringRef attr) {
  auto pair = op->getAttrOfType<DenseI64ArrayAttr>(attr);
  if (!pair || pair.size() != 2)
    fail("--emit cpp: {} has no {}; run needle-plan-session first", op->getName().getStringRef().str(), attr.str());
  return {pair[0], pair[1]};
}

void Emitter::emitBlock(Block &block) {
  for (Operation &op : block)
    emitOp(op);
}

void Emitter::emitHead(HeadOp op) {
  const ArrayRef<int64_t> probes = shapeOf(op.getProbes());
  const int64_t rows = probes[0], count = probes[1], d = probes[2], queries = shapeOf(op.getQuery())[0];
  const auto [state, stateBytes] = slot(op, "needle.state");
  const auto [scratch, scratchBytes] = slot(op, "needle.scratch");
  std::string cells;
  for (Value cell : op.getCells())
    cells += ref(cell) + ", ";
  line(fmt::format("if ({} != {}) {{", ref(op.getToken()), op.getPad()));
  line(fmt::format("  const float *cells[] = {{{}}};", cells));
  line(fmt::format("  needle_rt::head_pool_add({}, {}, {}, {}, cells, {});", arena(state), rows, count, d,
                   ref(op.getProbes())));
  line("}");
  const std::string pooled = arena(scratch + 2 * rows * count * static_cast<int64_t>(sizeof(float)));
  line(fmt::format("needle_rt::head_pool_finish({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});", arena(state), rows,
                   count, d, ref(op.getGain()), ref(op.getQuery()), ref(op.getRowBias()), queries,
                   floatLiteral(op.getEps().convertToFloat()), arena(scratch), pooled));
  if (op.getKind() == HeadKind::Confidence)
    line(fmt::format("{}[0] = needle_rt::head_confidence({}, {}, {}[0], {});", ref(op.getResult()), pooled,
                     ref(op.getProj()), ref(op.getBias()), queries * d));
  else
    line(fmt::format("needle_rt::head_embedding({}, {}, {}, {}, {});", pooled, ref(op.getProj()),
                     lengthOf(op.getResult()), queries * d, ref(op.getResult())));
}

void Emitter::emitOp(Operation &operation) {
  llvm::TypeSwitch<Operation *>(&operation)
      .Case<WeightOp, arith::ConstantOp, YieldOp>([](Operation *) {})
      .Case([&](CqGatherOp op) {
        const Cq w = cq(op.getTable());
        line(fmt::format("needle_rt::cq_row({}, {}, {}, {}, {}, {}, {});", w.packed, w.norms, w.codebook, w.bits,
                         ref(op.getIndex()), w.cols, ref(op.getResult())));
      })
      .Case([&](HadamardOp op) {
        line(fmt::format("needle_rt::hadamard({}, {}, {}, {});", ref(op.getInput()), lengthOf(op.getInput()),
                         op.getGroup(), ref(op.getResult())));
      })
      .Case([&](CqMatmulOp op) {
        const Cq w = cq(op.getWeight());
        line(fmt::format("needle_rt::cq_matvec({}, {}, {}, {}, {}, {}, {}, {});", w.packed, w.norms, w.codebook, w.bits,
                         w.rows, w.cols, ref(op.getInput()), ref(op.getResult())));
      })
      .Case([&](MatmulOp op) {
        if (!op.getMatrix().getDefiningOp<WeightOp>())
          fail("--emit cpp: needle.matmul of a computed matrix; run the pipeline (needle-fuse-cq-matmul) first");
        line(fmt::format("needle_rt::matvec({}, {}, {}, {}, {});", ref(op.getMatrix()), shapeOf(op.getMatrix())[0],
                         shapeOf(op.getMatrix())[1], ref(op.getInput()), ref(op.getResult())));
      })
      .Case([&](EngramGatherOp op) {
        const auto [state, bytes] = slot(op, "needle.state");
        const int64_t capacity = bytes / static_cast<int64_t>(sizeof(int32_t));
        const std::string ring = arena(state, "int32_t");
        std::string orders;
        for (int64_t order : op.getOrders())
          orders += fmt::format("{}, ", order);
        line("{");
        line(fmt::format("  static const int64_t orders[] = {{{}}};", orders));
        line(fmt::format("  needle_rt::engram_remember({}, {}, t, {});", ring, capacity, ref(op.getToken())));
        if (isa<CqType>(op.getTables().getType())) {
          const Cq w = cq(op.getTables());
          const ArrayRef<int64_t> tables = cast<CqType>(op.getTables().getType()).getShape();
          line(fmt::format("  needle_rt::engram_gather({}, {}, t, orders, {}, {}, {}, {}, {}, {}, {}, {}, {});", ring,
                           capacity, op.getOrders().size(), op.getHeads(), w.packed, w.norms, w.codebook, w.bits,
                           tables[1], tables[2], ref(op.getResult())));
        } else {
          const ArrayRef<int64_t> tables = shapeOf(op.getTables());
          line(fmt::format("  needle_rt::engram_gather_f32({}, {}, t, orders, {}, {}, {}, {}, {}, {});", ring, capacity,
                           op.getOrders().size(), op.getHeads(), ref(op.getTables()), tables[1], tables[2],
                           ref(op.getResult())));
        }
        line("}");
      })
      .Case([&](GatherOp op) {
        line(fmt::format("needle_rt::gather_row({}, {}, {}, {});", ref(op.getTable()), shapeOf(op.getTable())[1],
                         ref(op.getIndex()), ref(op.getResult())));
      })
      .Case([&](UnpadRowsOp op) {
        line(fmt::format("needle_rt::unpad_rows({}, {}, {}, {}, {});", ref(op.getInput()), op.getRows(),
                         lengthOf(op.getInput()) / static_cast<int64_t>(op.getRows()), op.getWidth(),
                         ref(op.getResult())));
      })
      .Case([&](ScaleOp op) {
        line(fmt::format("needle_rt::scale({}, {}, {}, {});", ref(op.getInput()), lengthOf(op.getInput()),
                         floatLiteral(op.getFactor().convertToFloat()), ref(op.getResult())));
      })
      .Case([&](LanesInitOp op) {
        line(fmt::format("needle_rt::lanes_init({}, {}, {});", ref(op.getInput()), lengthOf(op.getInput()),
                         ref(op.getResult())));
      })
      .Case([&](LaneNormOp op) {
        line(fmt::format("needle_rt::lane_norm({}, {}, {}, {});", ref(op.getLanes()), shapeOf(op.getLanes())[1],
                         floatLiteral(op.getEps().convertToFloat()), ref(op.getResult())));
      })
      .Case([&](MhcGatesOp op) {
        line(fmt::format("needle_rt::mhc_gates({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});", ref(op.getPre()),
                         ref(op.getPost()), ref(op.getRes()), ref(op.getA()), ref(op.getBPre()), ref(op.getBPost()),
                         ref(op.getBRes()), op.getPosition(), ref(op.getHPre()), ref(op.getHPost()), ref(op.getMix())));
      })
      .Case([&](LaneReadOp op) {
        line(fmt::format("needle_rt::lane_read({}, {}, {}, {});", ref(op.getLanes()), shapeOf(op.getLanes())[1],
                         ref(op.getHPre()), ref(op.getResult())));
      })
      .Case([&](LaneWriteOp op) {
        line(fmt::format("needle_rt::lane_write({}, {}, {}, {}, {}, {});", ref(op.getLanes()),
                         shapeOf(op.getLanes())[1], ref(op.getHPost()), ref(op.getMix()), ref(op.getUpdate()),
                         ref(op.getResult())));
      })
      .Case([&](LaneMeanOp op) {
        line(fmt::format("needle_rt::lane_mean({}, {}, {});", ref(op.getLanes()), shapeOf(op.getLanes())[1],
                         ref(op.getResult())));
      })
      .Case([&](EngramGateOp op) {
        line(fmt::format("needle_rt::engram_gate({}, {}, {}, {}, {}, {});", ref(op.getU()), ref(op.getKey()),
                         ref(op.getValue()), lengthOf(op.getU()), floatLiteral(op.getEps().convertToFloat()),
                         ref(op.getResult())));
      })
      .Case([&](CausalTapsOp op) {
        const int64_t count = shapeOf(op.getTaps())[0];
        const std::string ring = count > 1 ? arena(slot(op, "needle.state").first) : "nullptr";
        line(fmt::format("needle_rt::causal_taps({}, {}, {}, {}, {}, {}, t, {});", ref(op.getInput()),
                         lengthOf(op.getInput()), ref(op.getTaps()), count, op.getStride(), ring, ref(op.getResult())));
      })
      .Case([&](ZcNormOp op) {
        line(fmt::format("needle_rt::zc_norm({}, {}, {}, {}, {}, {});", ref(op.getInput()), ref(op.getScale()),
                         lengthOf(op.getInput()), op.getHeads(), floatLiteral(op.getEps().convertToFloat()),
                         ref(op.getResult())));
      })
      .Case([&](RopeOp op) {
        const int64_t n = lengthOf(op.getInput()), heads = op.getHeads();
        line(fmt::format("std::memcpy({}, {}, {});", ref(op.getResult()), ref(op.getInput()), n * 4));
        line(fmt::format("needle_rt::rope({}, {}, {}, {}, {:a});", ref(op.getResult()), heads, n / heads,
                         ref(op.getPosition()), op.getTheta().convertToDouble()));
      })
      .Case([&](AttentionOp op) {
        const auto [state, stateBytes] = slot(op, "needle.state");
        const int64_t scratch = slot(op, "needle.scratch").first;
        const int64_t heads = op.getHeads(), kvHeads = op.getKvHeads();
        const int64_t kWidth = lengthOf(op.getKey()), capacity = kvCapacity(op.getWindow(), maxSeqLen_);
        line(fmt::format("needle_rt::attention({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                         ref(op.getQuery()), ref(op.getKey()), ref(op.getValue()), heads, kvHeads,
                         lengthOf(op.getQuery()) / heads, lengthOf(op.getValue()) / kvHeads, op.getWindow(), capacity,
                         "t", arena(state), arena(state + capacity * kWidth * static_cast<int64_t>(sizeof(float))),
                         arena(scratch), ref(op.getResult())));
      })
      .Case([&](SigmoidGateOp op) {
        line(fmt::format("needle_rt::sigmoid_gate({}, {}, {}, {});", ref(op.getInput()), ref(op.getGate()),
                         lengthOf(op.getInput()), ref(op.getResult())));
      })
      .Case([&](ResidualGateOp op) {
        line(fmt::format("needle_rt::residual_gate({}, {}, {}, {}[0], {}, {}, {});", ref(op.getInput()),
                         ref(op.getUpdate()), ref(op.getNorm()), ref(op.getGate()), lengthOf(op.getInput()),
                         floatLiteral(op.getEps().convertToFloat()), ref(op.getResult())));
      })
      .Case([&](KronMlpOp op) {
        const auto [scratch, bytes] = slot(op, "needle.scratch");
        line("{");
        line(fmt::format("  const needle_rt::KronMlp mlp = {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                         "{}, {}, {}, {}, {}, {}}};",
                         lengthOf(op.getInput()), lengthOf(op.getD1()), shapeOf(op.getW1a())[0],
                         shapeOf(op.getW1b())[0], ref(op.getNorm()), ref(op.getW1a()), ref(op.getW2a()),
                         ref(op.getW3a()), ref(op.getW1b()), ref(op.getW2b()), ref(op.getW3b()), ref(op.getD1()),
                         ref(op.getD2()), ref(op.getB2()), ref(op.getD3()), ref(op.getD4()), ref(op.getCondV()),
                         ref(op.getCondU()), weight(op.getP1(), "int32_t"), weight(op.getP2(), "int32_t")));
        line(fmt::format("  needle_rt::kron_mlp(mlp, {}, {}, {}, {});", ref(op.getInput()),
                         floatLiteral(op.getEps().convertToFloat()), arena(scratch), ref(op.getResult())));
        line("}");
      })
      .Case([&](BlockUpdateOp op) {
        line(fmt::format("needle_rt::block_update({}, {}, {}, {}, {});", ref(op.getX1()), ref(op.getMlp()),
                         ref(op.getU()), lengthOf(op.getX1()), ref(op.getResult())));
      })
      .Case([&](BlockOp op) {
        line(fmt::format("// block {} (source block {}{})", op.getId(), op.getSource(),
                         op.getGlobal() ? ", global" : ""));
        Block &body = op.getBody().front();
        emitBlock(body);
        // The planner gives a block's results the buffers of what it yields.
        auto yield = cast<YieldOp>(body.getTerminator());
        if (bufferOf(yield.getLanes()) != bufferOf(op.getResult()) ||
            bufferOf(yield.getCell()) != bufferOf(op.getCell()))
          fail("--emit cpp: internal: a block's results are not planned in what it yields");
      })
      .Case([&](HeadOp op) { emitHead(op); })
      .Case([&](func::ReturnOp op) {
        logits_ = bufferOf(op.getOperand(0));
        confidence_ = bufferOf(op.getOperand(1));
        embedding_ = bufferOf(op.getOperand(2));
      })
      .Default([&](Operation *op) {
        fail("--emit cpp: {} has no kernel; run the pipeline first", op->getName().getStringRef().str());
      });
}

std::string Emitter::header() const {
  std::string guard = name_ + "_H";
  for (char &c : guard)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
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
}} {2}_info_t;

#ifndef NEEDLE_STATUS_CODES
#define NEEDLE_STATUS_CODES
enum {{ NEEDLE_OK = 0, NEEDLE_ERR_ARENA = -1, NEEDLE_ERR_TOKEN = -2, NEEDLE_ERR_FULL = -3, NEEDLE_ERR_ARG = -4 }};
#endif

const {2}_info_t *{2}_info(void);
size_t {2}_arena_size(void);
size_t {2}_arena_align(void);
{2}_session *{2}_open(void *arena, size_t size);
void {2}_reset({2}_session *s);
int {2}_feed({2}_session *s, const int32_t *tokens, size_t n);
const float *{2}_logits(const {2}_session *s);
float {2}_confidence(const {2}_session *s);
int {2}_embedding(const {2}_session *s, float *out);
size_t {2}_position(const {2}_session *s);

#ifdef __cplusplus
}}
#endif

#endif /* {1} */
)",
      versionString(), guard, name_);
}

std::string Emitter::interface() const {
  const Config &c = model_.config;
  auto arenaAttr = module_->getAttrOfType<DictionaryAttr>(kArenaAttr);
  auto get = [&](const char *key) { return cast<IntegerAttr>(arenaAttr.get(key)).getInt(); };
  std::string sources;
  for (int64_t source : c.sources())
    sources += fmt::format("{}, ", source);
  return fmt::format(R"(
namespace {{

constexpr size_t kArenaSize = {3}, kArenaAlign = {4}, kOutputsEnd = {5};
constexpr int64_t kMaxSeqLen = {6}, kVocabSize = {7}, kEmbeddingDim = {8};
constexpr size_t kLogits = {9}, kConfidence = {10}, kEmbedding = {11};
const int32_t kSourceBlocks[] = {{{12}}};

/// The session's header, at the start of its arena.
struct Header {{
  int64_t position; // tokens held
}};

Header *header(void *arena) {{ return static_cast<Header *>(arena); }}
const Header *header(const void *arena) {{ return static_cast<const Header *>(arena); }}

}} // namespace

extern "C" {{

const {0}_info_t *{0}_info(void) {{
  static const {0}_info_t info = {{{7}, {1}, {2}, {6}, {8}, kSourceBlocks}};
  return &info;
}}

size_t {0}_arena_size(void) {{ return kArenaSize; }}

size_t {0}_arena_align(void) {{ return kArenaAlign; }}

{0}_session *{0}_open(void *arena, size_t size) {{
  if (!arena || size < kArenaSize || reinterpret_cast<uintptr_t>(arena) % kArenaAlign)
    return nullptr;
  {0}_session *s = static_cast<{0}_session *>(arena);
  {0}_reset(s);
  return s;
}}

// The header, every op's state and the outputs are zeroed; the KV, tap and token rings are
// only ever read at positions written since.
void {0}_reset({0}_session *s) {{
  if (s)
    std::memset(static_cast<void *>(s), 0, kOutputsEnd);
}}

// Every token is checked before any is fed, so an error leaves the session as it was.
int {0}_feed({0}_session *s, const int32_t *tokens, size_t n) {{
  if (!s || (!tokens && n))
    return NEEDLE_ERR_ARG;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= kVocabSize)
      return NEEDLE_ERR_TOKEN;
  Header *h = header(s);
  if (n > static_cast<size_t>(kMaxSeqLen - h->position))
    return NEEDLE_ERR_FULL;
  unsigned char *arena = reinterpret_cast<unsigned char *>(s);
  for (size_t i = 0; i < n; ++i)
    step(arena, tokens[i], h->position++);
  return NEEDLE_OK;
}}

const float *{0}_logits(const {0}_session *s) {{
  return s ? reinterpret_cast<const float *>(reinterpret_cast<const unsigned char *>(s) + kLogits) : nullptr;
}}

float {0}_confidence(const {0}_session *s) {{
  if (!s)
    return 0.0f;
  if (header(s)->position == 0) // before any token: sigmoid of the head's bias
    return needle_rt::sigmoid(kConfidenceBias);
  return *reinterpret_cast<const float *>(reinterpret_cast<const unsigned char *>(s) + kConfidence);
}}

int {0}_embedding(const {0}_session *s, float *out) {{
  if (!s || !out)
    return NEEDLE_ERR_ARG;
  std::memcpy(out, reinterpret_cast<const unsigned char *>(s) + kEmbedding, kEmbeddingDim * sizeof(float));
  return NEEDLE_OK;
}}

size_t {0}_position(const {0}_session *s) {{ return s ? static_cast<size_t>(header(s)->position) : 0; }}

}} // extern "C"
)",
                     name_, c.dModel, c.numLayers, get("size"), get("align"), get("outputs_end"), c.maxSeqLen,
                     c.vocabSize, c.embeddingDim, logits_, confidence_, embedding_, sources);
}

CppModel Emitter::run(const std::string &headerName) {
  auto step = module_.lookupSymbol<func::FuncOp>("step");
  if (!step)
    fail("--emit cpp: the module has no func.func @step");
  auto maxSeq = module_->getAttrOfType<IntegerAttr>(kMaxSeqLenAttr);
  if (!module_->getAttrOfType<DictionaryAttr>(kArenaAttr) || !maxSeq)
    fail("--emit cpp: the module has no {}; run needle-plan-session first", kArenaAttr);
  maxSeqLen_ = maxSeq.getInt();
  // The blob's layout follows program order, not the order a call's arguments are evaluated in.
  step.walk([&](WeightOp op) {
    if (isa<CqType>(op.getType()))
      cq(op.getResult());
    else
      weight(op.getResult());
  });
  emitBlock(step.getBody().front());

  std::string codebooks;
  auto books = module_->getAttrOfType<DictionaryAttr>(kCodebooksAttr);
  for (NamedAttribute book : books) {
    codebooks += fmt::format("const float kCodebook{}[] = {{", book.getName().getValue().drop_front(2).str());
    for (float value : cast<DenseF32ArrayAttr>(book.getValue()).asArrayRef())
      codebooks += floatLiteral(value) + ", ";
    codebooks += "};\n";
  }
  const float bias = model_.floats("confidence.bias")[0];

  std::string source = fmt::format("// Generated by needlec {}: {} blocks, {} bytes of weights. Do not edit.\n",
                                   versionString(), model_.config.numLayers, blob_.bytes().size());
  source += fmt::format("#include \"{}\"\n\n", headerName);
  // The runtime lives in a namespace of this model's own (its functions stay inline with
  // external linkage, so none is reported unused): models built by different needlec versions
  // link into one program without clashing over kernel definitions.
  // Its standard headers come first, so their include guards keep them out of the namespace.
  source += "#include <cmath>\n#include <cstddef>\n#include <cstdint>\n#include <cstring>\n\n";
  source += fmt::format("namespace {}_runtime {{\n", name_);
  source += kRuntimeSource;
  source += fmt::format("\n}} // namespace {}_runtime\n\nnamespace {{\n\n", name_);
  source += fmt::format("namespace needle_rt = {}_runtime::needle_rt;\n\n", name_);
  source += codebooks + constants_;
  source += fmt::format("constexpr float kConfidenceBias = {};\n\n", floatLiteral(bias));
  source += "// The weights, read-only: packed CQ indices, fp16 norms, f32 and i32 tensors, 64-byte aligned.\n";
  source += fmt::format("alignas(64) const unsigned char kWeights[{}] =\n", blob_.bytes().size() + 1);
  appendStringLiteral(source, blob_.bytes());
  source += "    ;\n\n";
  source +=
      "template <typename T> const T *w(size_t offset) { return reinterpret_cast<const T *>(kWeights + offset); }\n";
  source += "template <typename T> T *a(unsigned char *arena, size_t offset) { return reinterpret_cast<T *>(arena + "
            "offset); }\n\n";
  source += "// One token through the model: @step, kernel by kernel, on buffers planned in the arena.\n";
  source += "void step(unsigned char *arena, int32_t token, int64_t t) {\n" + body_ + "}\n\n} // namespace\n";
  source += interface();
  return {header(), source};
}

} // namespace

CppModel emitCpp(ModuleOp module, const Model &model, const std::string &name, const std::string &headerName) {
  return Emitter(module, model, name).run(headerName);
}

} // namespace needle
