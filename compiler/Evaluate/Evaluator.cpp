#include "Evaluate/Evaluator.h"

#include "Import/WeightBinding.h"

#include "Needle/IR/NeedleDialect.h"
#include "Quant/Cq.h"
#include "Reference/Block.h"
#include "Support/Error.h"
#include "Support/Limits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <unordered_map>

namespace fs = std::filesystem;
using namespace mlir;
using namespace needle::ir;
using namespace needle::reference;

namespace needle {

fs::path moduleWeightsPath(ModuleOp module, const fs::path &irDirectory) {
  auto attr = module->getAttrOfType<StringAttr>(kModelAttr);
  if (!attr)
    fail("the module has no {} attribute naming its weights file", kModelAttr);
  fs::path path(attr.getValue().str());
  return path.is_absolute() ? path : irDirectory / path;
}

namespace {

/// Per-op state of the stateful ops, kept across tokens.
struct OpState {
  std::deque<Vec> history;          // causal_taps
  std::vector<Vec> keys, values;    // attention
  std::unique_ptr<OnlinePool> pool; // head
  HeadWeights head;                 // head
};

Lanes toLanes(const Vec &v) {
  const size_t d = v.size() / 4;
  Lanes lanes;
  for (size_t l = 0; l < 4; ++l)
    lanes[l].assign(v.begin() + l * d, v.begin() + (l + 1) * d);
  return lanes;
}

Vec fromLanes(const Lanes &lanes) {
  Vec v;
  for (const Vec &lane : lanes)
    v.insert(v.end(), lane.begin(), lane.end());
  return v;
}

} // namespace

struct IrEvaluator::Impl {
  Impl(ModuleOp module, const Model &model) : model(model) {
    step = module.lookupSymbol<func::FuncOp>("step");
    if (!step)
      fail("the module has no func.func @step");
    checkSignature();
    checkCodebooks(module);
  }

  /// @step(token: i32, position: i32) -> (logits [V], confidence [1], embedding [E]).
  void checkSignature() {
    const Config &c = model.config;
    auto vec = [&](int64_t n) { return RankedTensorType::get({n}, Float32Type::get(step.getContext())); };
    auto i32 = IntegerType::get(step.getContext(), 32);
    auto expected = FunctionType::get(step.getContext(), {i32, i32}, {vec(c.vocabSize), vec(1), vec(c.embeddingDim)});
    if (step.getFunctionType() != expected)
      fail("@step has type {}, but the model file needs {}", typeText(step.getFunctionType()), typeText(expected));
  }

  /// The module's codebooks are the ones the weights file holds.
  void checkCodebooks(ModuleOp module) const {
    auto books = module->getAttrOfType<DictionaryAttr>(kCodebooksAttr);
    for (const auto &[bits, values] : model.codebooks) {
      auto book = books ? books.getAs<DenseF32ArrayAttr>(fmt::format("cq{}", bits)) : DenseF32ArrayAttr();
      if (!book || book.asArrayRef() != ArrayRef<float>(values))
        fail("{}: the {}-bit codebook differs from the weights file's; the IR was made for other weights",
             kCodebooksAttr, bits);
    }
  }

  static std::string typeText(Type type) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    stream << type;
    return stream.str();
  }

  // ---- Weights: bound to the file once per needle.weight op ----

  const Tensor &tensorOf(Value v) {
    auto op = v.getDefiningOp<WeightOp>();
    if (!op)
      fail("a CQ value must come from needle.weight");
    return weights.tensor(op);
  }

  /// Float values of a weight or an activation.
  const Vec &in(Value v) {
    if (auto op = v.getDefiningOp<WeightOp>()) {
      auto [it, inserted] = floatWeights.try_emplace(op);
      if (inserted)
        it->second = weights.floats(op);
      return it->second;
    }
    auto it = env.find(v.getAsOpaquePointer());
    if (it == env.end())
      fail("internal: value used before it was computed");
    return it->second;
  }

  const std::vector<int32_t> &ints(Value v) {
    auto op = v.getDefiningOp<WeightOp>();
    auto [it, inserted] = intWeights.try_emplace(op);
    if (inserted)
      it->second = weights.ints(op);
    return it->second;
  }

  /// A CQ weight in the rotated domain, [rows, padded cols], decoded once.
  const Vec &rotated(Value v) {
    auto op = v.getDefiningOp<WeightOp>();
    auto [it, inserted] = rotatedWeights.try_emplace(op);
    if (inserted) {
      const Tensor &t = tensorOf(v);
      it->second.resize(t.rows() * cq::paddedCols(t.cols()));
      cq::decodeRotatedRows(t.packed.data(), t.norms.data(), 0, t.rows(), t.cols(), t.bits, model.codebooks.at(t.bits),
                            it->second.data());
    }
    return it->second;
  }

  // ---- Evaluation ----

  void runBlock(Block &block);
  void evaluate(Operation &op);
  Vec engramGather(EngramGatherOp op);
  Vec head(HeadOp op);

  void set(Value v, Vec value) { env[v.getAsOpaquePointer()] = std::move(value); }

  // Node-based maps: in() hands out references that must survive later insertions.
  const Model &model;
  WeightBinding weights{model};
  func::FuncOp step;
  std::unordered_map<Operation *, Vec> floatWeights, rotatedWeights;
  std::unordered_map<Operation *, std::vector<int32_t>> intWeights;
  std::unordered_map<Operation *, OpState> state;
  std::unordered_map<void *, Vec> env;    // by Value::getAsOpaquePointer()
  llvm::DenseMap<Value, int64_t> scalars; // token and position
  std::vector<int32_t> tokens;
  Outputs last;
};

void IrEvaluator::Impl::runBlock(Block &block) {
  for (Operation &op : block)
    evaluate(op);
}

Vec IrEvaluator::Impl::engramGather(EngramGatherOp op) {
  const Tensor &tables = tensorOf(op.getTables());
  const bool quantized = isa<CqType>(op.getTables().getType());
  // CQ rows in the rotated domain, padded to whole groups; float rows as they are.
  const Vec &rows = quantized ? rotated(op.getTables()) : in(op.getTables());
  const int64_t slots = tables.shape[1], padded = quantized ? cq::paddedCols(tables.cols()) : tables.cols();
  const int64_t t = scalars.lookup(op.getPosition()), heads = op.getHeads();
  if (t < 0 || t >= static_cast<int64_t>(tokens.size()))
    fail("needle.engram_gather: position {} is not a position fed so far", t);
  Vec out(lengthOf(op.getResult()), 0.0f);
  for (size_t oi = 0; oi < op.getOrders().size(); ++oi) {
    const int64_t order = op.getOrders()[oi];
    if (t < order - 1)
      continue;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t table = static_cast<int64_t>(oi) * heads + h;
      const uint32_t slot = engramSlot(tokens, t, static_cast<int64_t>(oi), order, h, heads, slots);
      const float *row = rows.data() + (table * slots + slot) * padded;
      std::copy(row, row + padded, out.begin() + table * padded);
    }
  }
  return out;
}

Vec IrEvaluator::Impl::head(HeadOp op) {
  OpState &s = state[op];
  if (!s.pool) {
    HeadWeights &h = s.head;
    auto shape = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
    h.rows = shape(op.getProbes())[0], h.probes = shape(op.getProbes())[1], h.queries = shape(op.getQuery())[0];
    h.outDim = shape(op.getProj())[0], h.dModel = shape(op.getProbes())[2];
    h.eps = op.getEps().convertToFloat(), h.pad = static_cast<int32_t>(op.getPad());
    h.probeVectors = in(op.getProbes());
    h.gain = in(op.getGain());
    h.query = in(op.getQuery());
    h.rowBias = in(op.getRowBias());
    h.proj = in(op.getProj());
    if (op.getBias())
      h.bias = in(op.getBias());
    s.pool = std::make_unique<OnlinePool>(h);
  }
  if (scalars.lookup(op.getToken()) != s.head.pad) {
    Cells cells;
    for (Value cell : op.getCells())
      cells.push_back(in(cell));
    s.pool->add(cells);
  }
  if (op.getKind() == ir::HeadKind::Confidence)
    return {confidenceFrom(s.head, s.pool->pooled())};
  return embeddingFrom(s.head, s.pool->pooled());
}

void IrEvaluator::Impl::evaluate(Operation &operation) {
  llvm::TypeSwitch<Operation *>(&operation)
      .Case([&](WeightOp) {}) // read lazily by the ops that use them
      .Case([&](arith::ConstantOp op) {
        auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
        if (!dense || !dense.getElementType().isF32())
          fail("needle-run evaluates only f32 tensor constants, not {}", typeText(op.getType()));
        if (elementCountWithin(dense.getType().getShape()) < 0)
          fail("a constant {} has more than the {} elements a tensor may have", typeText(op.getType()),
               kMaxTensorElements);
        set(op.getResult(), Vec(dense.getValues<float>().begin(), dense.getValues<float>().end()));
      })
      .Case([&](CqDequantOp op) { set(op.getResult(), rotated(op.getWeight())); })
      .Case([&](MatmulOp op) {
        set(op.getResult(), matvec(in(op.getMatrix()), lengthOf(op.getResult()), in(op.getInput())));
      })
      .Case([&](CqMatmulOp op) {
        set(op.getResult(), matvec(rotated(op.getWeight()), lengthOf(op.getResult()), in(op.getInput())));
      })
      .Case([&](HadamardOp op) {
        Vec x = in(op.getInput());
        x.resize(lengthOf(op.getResult()), 0.0f);
        for (size_t g = 0; g < x.size(); g += op.getGroup())
          cq::fwht(x.data() + g, op.getGroup());
        set(op.getResult(), std::move(x));
      })
      .Case([&](CqGatherOp op) {
        const Vec &rows = rotated(op.getTable());
        const int64_t width = lengthOf(op.getResult()), index = scalars.lookup(op.getIndex());
        if (index < 0 || index >= tensorOf(op.getTable()).rows())
          fail("needle.cq_gather: row {} is outside the table's {} rows", index, tensorOf(op.getTable()).rows());
        set(op.getResult(), Vec(rows.begin() + index * width, rows.begin() + (index + 1) * width));
      })
      .Case([&](EngramGatherOp op) { set(op.getResult(), engramGather(op)); })
      .Case([&](GatherOp op) {
        const Vec &rows = in(op.getTable());
        const int64_t width = lengthOf(op.getResult()), index = scalars.lookup(op.getIndex());
        if (index < 0 || index >= cast<RankedTensorType>(op.getTable().getType()).getDimSize(0))
          fail("needle.gather: row {} is outside the table", index);
        set(op.getResult(), Vec(rows.begin() + index * width, rows.begin() + (index + 1) * width));
      })
      .Case([&](UnpadRowsOp op) {
        const Vec &x = in(op.getInput());
        const int64_t padded = lengthOf(op.getInput()) / op.getRows();
        Vec out;
        for (int64_t r = 0; r < static_cast<int64_t>(op.getRows()); ++r)
          out.insert(out.end(), x.begin() + r * padded, x.begin() + r * padded + op.getWidth());
        set(op.getResult(), std::move(out));
      })
      .Case([&](ScaleOp op) {
        Vec x = in(op.getInput());
        for (float &v : x)
          v *= op.getFactor().convertToFloat();
        set(op.getResult(), std::move(x));
      })
      .Case([&](LanesInitOp op) {
        const Vec &x = in(op.getInput());
        set(op.getResult(), fromLanes({x, x, x, x}));
      })
      .Case([&](LaneNormOp op) {
        set(op.getResult(), laneNorm(toLanes(in(op.getLanes())), op.getEps().convertToFloat()));
      })
      .Case([&](MhcGatesOp op) {
        const LaneMix mix = mhcGates(in(op.getPre()), in(op.getPost()), in(op.getRes()), in(op.getA()),
                                     in(op.getBPre()), in(op.getBPost()), in(op.getBRes()), op.getPosition());
        set(op.getHPre(), Vec(mix.pre.begin(), mix.pre.end()));
        set(op.getHPost(), Vec(mix.post.begin(), mix.post.end()));
        set(op.getMix(), Vec(mix.res.begin(), mix.res.end()));
      })
      .Case([&](LaneReadOp op) {
        LaneMix mix;
        const Vec &pre = in(op.getHPre());
        std::copy(pre.begin(), pre.end(), mix.pre.begin());
        set(op.getResult(), readLanes(mix, toLanes(in(op.getLanes()))));
      })
      .Case([&](LaneWriteOp op) {
        LaneMix mix;
        const Vec &post = in(op.getHPost()), &res = in(op.getMix());
        std::copy(post.begin(), post.end(), mix.post.begin());
        std::copy(res.begin(), res.end(), mix.res.begin());
        Lanes lanes = toLanes(in(op.getLanes()));
        writeLanes(mix, lanes, in(op.getUpdate()));
        set(op.getResult(), fromLanes(lanes));
      })
      .Case([&](LaneMeanOp op) { set(op.getResult(), meanOfLanes(toLanes(in(op.getLanes())))); })
      .Case([&](EngramGateOp op) {
        set(op.getResult(), addEngram(in(op.getU()), in(op.getKey()), in(op.getValue()), op.getEps().convertToFloat()));
      })
      .Case([&](CausalTapsOp op) {
        OpState &s = state[op];
        const int64_t count = cast<RankedTensorType>(op.getTaps().getType()).getDimSize(0);
        const Vec &x = in(op.getInput());
        set(op.getResult(), applyTaps(x, s.history, in(op.getTaps()), count, op.getStride()));
        remember(s.history, x, static_cast<size_t>(op.getStride() * (count - 1)));
      })
      .Case([&](ZcNormOp op) {
        const Vec &x = in(op.getInput()), &scale = in(op.getScale());
        const size_t d = x.size() / op.getHeads();
        Vec out;
        for (int64_t h = 0; h < static_cast<int64_t>(op.getHeads()); ++h) {
          const Vec part = zc(std::span(x.data() + h * d, d), scale, op.getEps().convertToFloat());
          out.insert(out.end(), part.begin(), part.end());
        }
        set(op.getResult(), std::move(out));
      })
      .Case([&](RopeOp op) {
        Vec x = in(op.getInput());
        const size_t d = x.size() / op.getHeads();
        for (int64_t h = 0; h < static_cast<int64_t>(op.getHeads()); ++h)
          rope(std::span(x.data() + h * d, d), scalars.lookup(op.getPosition()), op.getTheta().convertToDouble());
        set(op.getResult(), std::move(x));
      })
      .Case([&](AttentionOp op) {
        OpState &s = state[op];
        s.keys.push_back(in(op.getKey()));
        s.values.push_back(in(op.getValue()));
        const int64_t t = static_cast<int64_t>(s.keys.size()) - 1;
        set(op.getResult(), attend(in(op.getQuery()), s.keys, s.values, firstVisible(op.getWindow(), t), t,
                                   op.getHeads(), op.getKvHeads()));
      })
      .Case([&](SigmoidGateOp op) { set(op.getResult(), sigmoidGate(in(op.getInput()), in(op.getGate()))); })
      .Case([&](ResidualGateOp op) {
        set(op.getResult(), residualGate(in(op.getInput()), in(op.getUpdate()), in(op.getNorm()), in(op.getGate())[0],
                                         op.getEps().convertToFloat()));
      })
      .Case([&](KronMlpOp op) {
        MlpWeights mlp;
        mlp.rows = cast<RankedTensorType>(op.getW1a().getType()).getDimSize(0);
        mlp.cols = cast<RankedTensorType>(op.getW1b().getType()).getDimSize(0);
        mlp.norm = in(op.getNorm());
        mlp.w1a = in(op.getW1a()), mlp.w2a = in(op.getW2a()), mlp.w3a = in(op.getW3a());
        mlp.w1b = in(op.getW1b()), mlp.w2b = in(op.getW2b()), mlp.w3b = in(op.getW3b());
        mlp.d1 = in(op.getD1()), mlp.d2 = in(op.getD2()), mlp.b2 = in(op.getB2()), mlp.d3 = in(op.getD3());
        mlp.d4 = in(op.getD4()), mlp.condV = in(op.getCondV()), mlp.condU = in(op.getCondU());
        mlp.p1 = ints(op.getP1()), mlp.p2 = ints(op.getP2());
        set(op.getResult(), kronMlp(mlp, in(op.getInput()), op.getEps().convertToFloat()));
      })
      .Case([&](BlockUpdateOp op) { set(op.getResult(), blockUpdate(in(op.getX1()), in(op.getMlp()), in(op.getU()))); })
      .Case([&](BlockOp op) {
        Block &body = op.getBody().front();
        set(body.getArgument(0), in(op.getLanes()));
        scalars[body.getArgument(1)] = scalars.lookup(op.getToken());
        scalars[body.getArgument(2)] = scalars.lookup(op.getPosition());
        runBlock(body);
        auto yield = cast<YieldOp>(body.getTerminator());
        set(op.getResult(), in(yield.getLanes()));
        set(op.getCell(), in(yield.getCell()));
      })
      .Case([&](YieldOp) {})
      .Case([&](HeadOp op) { set(op.getResult(), head(op)); })
      .Case([&](func::ReturnOp op) {
        last.logits = in(op.getOperand(0));
        last.confidence = in(op.getOperand(1))[0];
        last.embedding = in(op.getOperand(2));
      })
      .Default([&](Operation *op) { fail("needle-run cannot evaluate {}", op->getName().getStringRef().str()); });
}

IrEvaluator::IrEvaluator(ModuleOp module, const Model &weights) : impl_(std::make_unique<Impl>(module, weights)) {}

IrEvaluator::~IrEvaluator() = default;

void IrEvaluator::feed(std::span<const int32_t> tokens) {
  checkTokens(impl_->model.config, tokens, static_cast<int64_t>(impl_->tokens.size()));
  Block &entry = impl_->step.getBody().front();
  for (int32_t token : tokens) {
    impl_->scalars[entry.getArgument(0)] = token;
    impl_->scalars[entry.getArgument(1)] = static_cast<int64_t>(impl_->tokens.size());
    impl_->tokens.push_back(token);
    impl_->runBlock(entry);
    impl_->env.clear();
  }
  impl_->last.position = static_cast<int64_t>(impl_->tokens.size());
}

Outputs IrEvaluator::outputs() const {
  if (!impl_->tokens.empty())
    return impl_->last;
  return outputsBeforeAnyToken(impl_->model.config, impl_->model.floats("confidence.bias")[0]);
}

} // namespace needle
