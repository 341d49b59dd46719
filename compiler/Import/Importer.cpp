#include "Import/Importer.h"

#include "Model/Layout.h"
#include "Needle/IR/NeedleDialect.h"
#include "Quant/Cq.h"
#include "Support/Error.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace needle::ir;

namespace needle {

void loadNeedleDialects(MLIRContext &context) {
  context.loadDialect<NeedleDialect, func::FuncDialect, arith::ArithDialect>();
}

namespace {

class Importer {
public:
  Importer(MLIRContext &context, const Model &model)
      : ctx_(context), model_(model), c_(model.config), fileLoc_(UnknownLoc::get(&context)), loc_(fileLoc_),
        sources_(model.config.sources()) {}

  OwningOpRef<ModuleOp> run(const std::string &weightsPath);

private:
  RankedTensorType vec(int64_t n) const { return RankedTensorType::get({n}, Float32Type::get(&ctx_)); }
  FloatAttr f32(double v) const { return FloatAttr::get(Float32Type::get(&ctx_), v); }
  FloatAttr eps() const { return f32(c_.rmsEps); }
  /// `name` (a tensor, a block, a head) inside the model file: where a diagnostic points.
  Location named(const std::string &name) const { return NameLoc::get(StringAttr::get(&ctx_, name), fileLoc_); }
  IntegerAttr i64(int64_t v) const { return IntegerAttr::get(IntegerType::get(&ctx_, 64), v); }

  /// The model tensor behind (leaf, source block).
  const Tensor &tensorFor(const std::string &leaf, std::optional<int64_t> source) const;
  Value weight(OpBuilder &b, const std::string &leaf, std::optional<int64_t> source = std::nullopt);
  /// A head tensor restricted to the head rows of x0 and every block.
  Value headWeight(OpBuilder &b, const std::string &name);
  /// W x for a CQ weight: hadamard, dequant, matmul (fused and folded by the passes); a float
  /// weight is a plain matmul.
  Value project(OpBuilder &b, Value w, Value x);
  Value hadamard(OpBuilder &b, Value x) {
    const int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(0);
    return b.create<HadamardOp>(loc_, vec(cq::paddedCols(n)), x, i64(cq::kGroup));
  }
  void buildBlock(OpBuilder &b, BlockOp op, int64_t index);
  Value engram(OpBuilder &b, int64_t source, Value u, Value token, Value position);
  Value head(OpBuilder &b, const std::string &name, ValueRange cells, Value token, bool confidence);

  MLIRContext &ctx_;
  const Model &model_;
  const Config &c_;
  Location fileLoc_; // the model file
  Location loc_;     // what is being built: a block, a head, or the whole file
  std::vector<int64_t> sources_;
};

const Tensor &Importer::tensorFor(const std::string &leaf, std::optional<int64_t> source) const {
  return model_.tensor(source ? sourceTensorName(c_, leaf, *source) : leaf);
}

Value Importer::weight(OpBuilder &b, const std::string &leaf, std::optional<int64_t> source) {
  const Location loc = named(source ? sourceTensorName(c_, leaf, *source) : leaf);
  if ((leaf == "mlp.p1" || leaf == "mlp.p2") && !model_.tensors.count(leaf)) // Needle's default draw
    return b.create<WeightOp>(loc, RankedTensorType::get({c_.mlpWidth()}, IntegerType::get(&ctx_, 32)),
                              b.getStringAttr(leaf), IntegerAttr(), DenseI64ArrayAttr());
  const Tensor &t = tensorFor(leaf, source);
  Type type;
  if (t.storage == Tensor::Storage::CQ)
    type = CqType::get(&ctx_, t.bits, cq::kGroup, t.shape);
  else if (t.storage == Tensor::Storage::I32)
    type = RankedTensorType::get(t.shape, IntegerType::get(&ctx_, 32));
  else
    type = RankedTensorType::get(t.shape, Float32Type::get(&ctx_));
  return b.create<WeightOp>(loc, type, b.getStringAttr(leaf), source ? i64(*source) : IntegerAttr(),
                            DenseI64ArrayAttr());
}

Value Importer::headWeight(OpBuilder &b, const std::string &name) {
  std::vector<int64_t> shape = model_.tensor(name).shape;
  shape[headRowAxis(name)] = static_cast<int64_t>(sources_.size()) + 1;
  return b.create<WeightOp>(named(name), RankedTensorType::get(shape, Float32Type::get(&ctx_)), b.getStringAttr(name),
                            IntegerAttr(), b.getDenseI64ArrayAttr(sources_));
}

Value Importer::project(OpBuilder &b, Value w, Value x) {
  if (auto cq = dyn_cast<CqType>(w.getType())) {
    Value rotated = hadamard(b, x);
    auto matrix = RankedTensorType::get({cq.getRows(), cq.getPaddedCols()}, Float32Type::get(&ctx_));
    Value dequant = b.create<CqDequantOp>(loc_, matrix, w);
    return b.create<MatmulOp>(loc_, vec(cq.getRows()), dequant, rotated);
  }
  return b.create<MatmulOp>(loc_, vec(cast<RankedTensorType>(w.getType()).getDimSize(0)), w, x);
}

Value Importer::engram(OpBuilder &b, int64_t source, Value u, Value token, Value position) {
  const int64_t D = c_.dModel, tables = c_.engramTableCount(), sub = c_.engramSubDim();
  Value table = weight(b, "engram.tables", source);
  const bool quantized = isa<CqType>(table.getType());
  const int64_t padded = quantized ? cq::paddedCols(sub) : sub;
  Value rows = b.create<EngramGatherOp>(loc_, vec(tables * padded), table, token, position,
                                        b.getDenseI64ArrayAttr(c_.engramOrders), i64(c_.engramHeadCount()));
  if (quantized) // CQ rows come in the rotated domain, padded to whole groups
    rows = hadamard(b, rows);
  if (padded != sub)
    rows = b.create<UnpadRowsOp>(loc_, vec(D), rows, i64(tables), i64(sub));
  Value key = project(b, weight(b, "engram.key", source), rows);
  Value value = project(b, weight(b, "engram.value", source), rows);
  Value taps = weight(b, "engram.taps", source);
  value = b.create<CausalTapsOp>(loc_, vec(D), value, taps, i64(c_.engramDelta()));
  return b.create<EngramGateOp>(loc_, vec(D), u, key, value, eps());
}

void Importer::buildBlock(OpBuilder &outer, BlockOp op, int64_t index) {
  const int64_t D = c_.dModel, source = sources_[index];
  Block *body = new Block();
  op.getBody().push_back(body);
  Value lanes = body->addArgument(op.getLanes().getType(), loc_);
  Value token = body->addArgument(op.getToken().getType(), loc_);
  Value position = body->addArgument(op.getPosition().getType(), loc_);
  OpBuilder b = OpBuilder::atBlockEnd(body);
  auto w = [&](const char *leaf) { return weight(b, leaf, source); };

  Value nx = b.create<LaneNormOp>(loc_, vec(4 * D), lanes, eps());
  Value pre = project(b, w("mhc.phi_pre"), nx), post = project(b, w("mhc.phi_post"), nx);
  Value res = project(b, w("mhc.phi_res"), nx);
  auto mix4 = RankedTensorType::get({4, 4}, Float32Type::get(&ctx_));
  // Weights are created one statement at a time: argument evaluation order is unspecified,
  // and the printed IR must not depend on the compiler.
  Value a = w("mhc.a"), bPre = w("mhc.b_pre"), bPost = w("mhc.b_post"), bRes = w("mhc.b_res");
  auto gates = b.create<MhcGatesOp>(loc_, vec(4), vec(4), mix4, pre, post, res, a, bPre, bPost, bRes, i64(index));
  Value u = b.create<LaneReadOp>(loc_, vec(D), lanes, gates.getHPre());
  Value x = c_.engramSite(index) >= 0 ? engram(b, source, u, token, position) : u;

  Value attnNorm = w("attn_norm");
  Value s = b.create<ZcNormOp>(loc_, vec(D), x, attnNorm, i64(1), eps());
  Value q = project(b, w("attn.q"), s), k = project(b, w("attn.k"), s), v = project(b, w("attn.v"), s);
  Value gate = project(b, w("attn.gate"), s);
  auto taps = [&](Value z, const char *leaf) {
    Value weights = w(leaf);
    return b.create<CausalTapsOp>(loc_, z.getType(), z, weights, i64(1)).getResult();
  };
  if (c_.qkvConvTaps > 0)
    q = taps(q, "attn.q_taps"), k = taps(k, "attn.k_taps"), v = taps(v, "attn.v_taps");
  const FloatAttr theta = FloatAttr::get(Float64Type::get(&ctx_), c_.ropeTheta);
  auto normAndRope = [&](Value z, const char *leaf, int64_t heads) {
    Value norm = w(leaf);
    z = b.create<ZcNormOp>(loc_, z.getType(), z, norm, i64(heads), eps());
    return b.create<RopeOp>(loc_, z.getType(), z, position, i64(heads), theta).getResult();
  };
  q = normAndRope(q, "attn.q_norm", c_.numHeads);
  k = normAndRope(k, "attn.k_norm", c_.numKvHeads);
  const int64_t window = c_.isGlobal(index) ? 0 : c_.slidingWindow;
  Value o = b.create<AttentionOp>(loc_, vec(c_.numHeads * c_.vHeadDim), q, k, v, i64(c_.numHeads), i64(c_.numKvHeads),
                                  i64(window));
  o = b.create<SigmoidGateOp>(loc_, o.getType(), o, gate);
  Value update = project(b, w("attn.o"), o);
  Value postNorm = w("post_attn_norm"), attnGate = w("attn_gate");
  Value x1 = b.create<ResidualGateOp>(loc_, vec(D), x, update, postNorm, attnGate, eps());
  SmallVector<Value> mlpWeights;
  for (const char *leaf : {"mlp_norm", "mlp.w1a", "mlp.w2a", "mlp.w3a", "mlp.w1b", "mlp.w2b", "mlp.w3b", "mlp.d1",
                           "mlp.d2", "mlp.b2", "mlp.d3", "mlp.d4", "mlp.cond_v", "mlp.cond_u"})
    mlpWeights.push_back(w(leaf));
  mlpWeights.push_back(weight(b, "mlp.p1"));
  mlpWeights.push_back(weight(b, "mlp.p2"));
  Value mlp =
      b.create<KronMlpOp>(loc_, vec(D), x1, mlpWeights[0], mlpWeights[1], mlpWeights[2], mlpWeights[3], mlpWeights[4],
                          mlpWeights[5], mlpWeights[6], mlpWeights[7], mlpWeights[8], mlpWeights[9], mlpWeights[10],
                          mlpWeights[11], mlpWeights[12], mlpWeights[13], mlpWeights[14], mlpWeights[15], eps());
  Value y = b.create<BlockUpdateOp>(loc_, vec(D), x1, mlp, u);
  Value next = b.create<LaneWriteOp>(loc_, lanes.getType(), lanes, gates.getMix(), gates.getHPost(), y);
  Value cell = b.create<LaneMeanOp>(loc_, vec(D), next);
  b.create<YieldOp>(loc_, next, cell);
}

Value Importer::head(OpBuilder &b, const std::string &name, ValueRange cells, Value token, bool confidence) {
  loc_ = named(name);
  const int64_t out = confidence ? 1 : c_.embeddingDim;
  Value probes = headWeight(b, name + ".probes"), gain = headWeight(b, name + ".gain");
  Value query = weight(b, name + ".query"), rowBias = headWeight(b, name + ".row_bias");
  Value proj = weight(b, name + ".proj");
  Value bias = confidence ? weight(b, name + ".bias") : Value();
  const HeadKind kind = confidence ? HeadKind::Confidence : HeadKind::Embedding;
  return b.create<HeadOp>(loc_, vec(out), cells, token, probes, gain, query, rowBias, proj, bias,
                          HeadKindAttr::get(&ctx_, kind), i64(c_.padTokenId), eps());
}

OwningOpRef<ModuleOp> Importer::run(const std::string &weightsPath) {
  fileLoc_ = loc_ = FileLineColLoc::get(&ctx_, weightsPath, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc_);
  OpBuilder b(&ctx_);
  std::vector<NamedAttribute> codebooks;
  for (const auto &[bits, values] : model_.codebooks)
    codebooks.emplace_back(b.getStringAttr(fmt::format("cq{}", bits)), b.getDenseF32ArrayAttr(values));
  (*module)->setAttr(kModelAttr, b.getStringAttr(weightsPath));
  (*module)->setAttr(kCodebooksAttr, b.getDictionaryAttr(codebooks));
  (*module)->setAttr(kLadderOrderAttr, b.getDenseI64ArrayAttr(c_.order()));
  (*module)->setAttr(kMaxSeqLenAttr, b.getI64IntegerAttr(c_.maxSeqLen));

  const int64_t D = c_.dModel;
  auto i32 = IntegerType::get(&ctx_, 32);
  auto type = b.getFunctionType({i32, i32}, {vec(c_.vocabSize), vec(1), vec(c_.embeddingDim)});
  b.setInsertionPointToEnd(module->getBody());
  auto step = b.create<func::FuncOp>(loc_, "step", type);
  Block *entry = step.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  Value token = entry->getArgument(0), position = entry->getArgument(1);

  Value embed = weight(b, "embed.weight");
  Value row;
  if (auto cq = dyn_cast<CqType>(embed.getType())) // a CQ row in the rotated domain, then decoded
    row = hadamard(b, b.create<CqGatherOp>(loc_, vec(cq.getPaddedCols()), embed, token));
  else
    row = b.create<GatherOp>(loc_, vec(D), embed, token);
  Value x0 = b.create<ScaleOp>(loc_, vec(D), row, f32(std::sqrt(static_cast<float>(D))));
  Value lanes = b.create<LanesInitOp>(loc_, RankedTensorType::get({4, D}, Float32Type::get(&ctx_)), x0);
  std::vector<Value> cells = {x0};
  for (int64_t i = 0; i < c_.numLayers; ++i) {
    loc_ = named(fmt::format("blocks.{}", sources_[i]));
    auto block =
        b.create<BlockOp>(loc_, lanes.getType(), vec(D), lanes, token, position, i64(i), i64(sources_[i]),
                          b.getBoolAttr(c_.isGlobal(i)), c_.engramSite(i) >= 0 ? i64(c_.engramSite(i)) : IntegerAttr());
    buildBlock(b, block, i);
    lanes = block.getResult();
    cells.push_back(block.getCell());
  }
  loc_ = fileLoc_;
  Value mean = b.create<LaneMeanOp>(loc_, vec(D), lanes), finalNorm = weight(b, "final_norm");
  Value xf = b.create<ZcNormOp>(loc_, vec(D), mean, finalNorm, i64(1), eps());
  Value logits = project(b, embed, xf);
  Value confidence = head(b, "confidence", cells, token, true);
  Value embedding = head(b, "embedding_head", cells, token, false);
  loc_ = fileLoc_;
  b.create<func::ReturnOp>(loc_, ValueRange{logits, confidence, embedding});
  if (failed(verify(*module)))
    fail("{}: the imported IR does not verify (see the diagnostics above)", weightsPath);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importModel(MLIRContext &context, const Model &model, const std::string &weightsPath) {
  return Importer(context, model).run(weightsPath);
}

} // namespace needle
