#include "codegen/Lower/Lower.h"
#include "codegen/Lower/Stages.h"
#include "codegen/Transforms/SessionNeeds.h"

#include "Import/WeightBinding.h"
#include "Needle/IR/NeedleDialect.h"
#include "Support/Error.h"
#include "Support/RoundUp.h"
#include "needle_contract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace needle::ir;

namespace needle {

namespace {

using Arg = KernelArg;
using Kind = KernelArg::Kind;
constexpr int64_t kFloatBytes = sizeof(float);

Arg f32(APFloat value) { return Arg::f32(value.convertToFloat()); }

class Lowering {
public:
  Lowering(ModuleOp module, const Model &model, std::string backend, int64_t batch, KernelProgram &program,
           WeightStore &store)
      : module_(module), model_(model), binding_(model), backend_(std::move(backend)), batch_(batch), program_(program),
        store_(store) {}

  void run();

private:
  template <typename... Args> [[noreturn]] void error(fmt::format_string<Args...> format, Args &&...args) {
    fail("{}: {}", backend_, fmt::format(format, std::forward<Args>(args)...));
  }
  void call(std::string kernel, std::vector<Arg> args) {
    calls_.push_back({{std::move(kernel), std::move(args), {}}, outputsOnly_});
  }

  // Operands as kernel arguments.
  Arg ref(Value v);
  int64_t bufferOf(Value v);
  int64_t addWeight(const void *data, size_t bytes, const std::string &shape = "");
  Arg weight(Value v, const char *element = "float");
  Arg weightRows(Value v);
  struct Cq {
    Arg packed, norms, codebook, bits;
    int64_t rows, cols;
  };
  Cq cq(Value v);
  Arg constant(arith::ConstantOp op);
  std::pair<int64_t, int64_t> slot(Operation *op, StringRef attr);

  void lowerBlock(Block &block);
  void lowerOp(Operation &op);
  void lowerHead(HeadOp op);
  void lowerReturn(func::ReturnOp op);
  void lowerEngram(EngramGatherOp op);
  void lowerInterface();
  void planBatches();

  ModuleOp module_;
  const Model &model_;
  WeightBinding binding_;
  std::string backend_;
  int64_t batch_;
  KernelProgram &program_; // the rungs before this one, and the weights, codebooks and constants they share
  WeightStore &store_;
  RungProgram rung_;
  std::vector<StepCall> calls_;                  // the one-token step, in order
  llvm::DenseSet<Operation *> outputsOnlyOps_;   // whose results reach only @step's return
  bool outputsOnly_ = false;                     // of the op being lowered
  std::map<std::string, int64_t> weightOffsets_; // by tensor name and head rows
  std::map<std::string, int64_t> normsOffsets_;  // a CQ tensor's norms, by its name
  std::map<std::string, Arg> rowLists_;          // weightRows', by tensor name and head rows
  llvm::DenseMap<Operation *, int64_t> constantIndex_;
  llvm::DenseMap<Operation *, std::vector<KernelCall>> headCalls_; // a head function's, by its needle.head
  SessionLimits limits_;                                           // the plan's: they sized the rings
};

int64_t Lowering::bufferOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto block = dyn_cast<BlockOp>(arg.getOwner()->getParentOp());
    if (!block || arg.getArgNumber() != 0)
      error("internal: a tensor block argument outside needle.block");
    return bufferOf(block.getLanes());
  }
  auto buffers = v.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>("needle.buffers");
  if (!buffers)
    error("{} has no arena buffer; run needle-plan-session first", v.getDefiningOp()->getName().getStringRef().str());
  return buffers[cast<OpResult>(v).getResultNumber()];
}

Arg Lowering::ref(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto block = dyn_cast<BlockOp>(arg.getOwner()->getParentOp()))
      return ref(block->getOperand(arg.getArgNumber()));
    if (!isa<IntegerType>(v.getType()))
      error("@step may take only the token and the position");
    return Arg::of(arg.getArgNumber() == 0 ? Kind::Token : Kind::Position);
  }
  Operation *def = v.getDefiningOp();
  if (isa<WeightOp>(def))
    return weight(v);
  if (auto op = dyn_cast<arith::ConstantOp>(def))
    return constant(op);
  return Arg::arena(bufferOf(v));
}

int64_t Lowering::addWeight(const void *data, size_t bytes, const std::string &shape) {
  return store_.add(program_.weights, data, bytes, shape);
}

Arg Lowering::weight(Value v, const char *element) {
  auto op = v.getDefiningOp<WeightOp>();
  std::string key = binding_.tensorName(op);
  if (op.getRows())
    for (int64_t row : op.getRowsAttr().asArrayRef())
      key += fmt::format(",{}", row);
  auto [it, inserted] = weightOffsets_.try_emplace(key, 0);
  if (inserted) {
    if (cast<RankedTensorType>(op.getType()).getElementType().isInteger(32)) {
      const std::vector<int32_t> ints = binding_.ints(op);
      it->second = addWeight(ints.data(), ints.size() * sizeof(int32_t));
    } else {
      const std::vector<float> floats = binding_.floats(op);
      it->second = addWeight(floats.data(), floats.size() * sizeof(float));
    }
  }
  return Arg::weight(it->second, element);
}

/// A float weight [rows, ...] as the list of its rows, each stored on its own: the rungs of one
/// object share the rows that belong to the blocks they keep (a head's probes).
Arg Lowering::weightRows(Value v) {
  auto op = v.getDefiningOp<WeightOp>();
  if (!op)
    error("a head's probes must come from needle.weight");
  std::string key = binding_.tensorName(op);
  if (op.getRows())
    for (int64_t row : op.getRowsAttr().asArrayRef())
      key += fmt::format(",{}", row);
  auto [it, inserted] = rowLists_.try_emplace(key, Arg::of(Kind::PointerList));
  if (inserted) {
    const std::vector<float> floats = binding_.floats(op);
    const int64_t rows = shapeOf(v)[0], each = static_cast<int64_t>(floats.size()) / rows;
    for (int64_t r = 0; r < rows; ++r)
      it->second.pointers.push_back(Arg::weight(addWeight(floats.data() + r * each, each * sizeof(float))));
  }
  return it->second;
}

Lowering::Cq Lowering::cq(Value v) {
  auto op = v.getDefiningOp<WeightOp>();
  if (!op)
    error("a CQ operand must come from needle.weight");
  const Tensor &t = binding_.tensor(op);
  const std::string name = binding_.tensorName(op);
  auto [it, inserted] = weightOffsets_.try_emplace(name, 0);
  if (inserted) {
    // Re-laid for a kernel later by their shape: bytes alike in two shapes are two tensors.
    const std::string shape = fmt::format("cq{} {}x{}", t.bits, t.rows(), t.cols());
    it->second = addWeight(t.packed.data(), t.packed.size(), shape);
    normsOffsets_[name] = addWeight(t.norms.data(), t.norms.size() * sizeof(uint16_t), shape + " norms");
  }
  return {Arg::weight(it->second, "uint8_t"),
          Arg::weight(normsOffsets_.at(name), "uint16_t"),
          Arg::of(Kind::Codebook, t.bits),
          Arg::i32(t.bits),
          t.rows(),
          t.cols()};
}

Arg Lowering::constant(arith::ConstantOp op) {
  auto [it, inserted] = constantIndex_.try_emplace(op, static_cast<int64_t>(program_.constants.size()));
  if (inserted) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense || !dense.getElementType().isF32())
      error("only f32 tensor constants are supported");
    auto values = dense.getValues<float>();
    std::vector<float> floats(values.begin(), values.end());
    // A rung before this one may hold the same array.
    auto same = std::find(program_.constants.begin(), program_.constants.end(), floats);
    it->second = same - program_.constants.begin();
    if (same == program_.constants.end())
      program_.constants.push_back(std::move(floats));
  }
  return Arg::of(Kind::Constant, it->second);
}

std::pair<int64_t, int64_t> Lowering::slot(Operation *op, StringRef attr) {
  auto pair = op->getAttrOfType<DenseI64ArrayAttr>(attr);
  if (!pair || pair.size() != 2)
    error("{} has no {}; run needle-plan-session first", op->getName().getStringRef().str(), attr.str());
  return {pair[0], pair[1]};
}

void Lowering::lowerBlock(Block &block) {
  for (Operation &op : block)
    lowerOp(op);
}

void Lowering::lowerHead(HeadOp op) {
  const ArrayRef<int64_t> probes = shapeOf(op.getProbes());
  const int64_t rows = probes[0], count = probes[1], d = probes[2], queries = shapeOf(op.getQuery())[0];
  const int64_t state = slot(op, "needle.state").first, floats = needle_rt::head_state_floats(rows, count, d);
  rung_.facts.pools.insert(rung_.facts.pools.end(), {state, floats});
  if (limits_.maxRollback)
    call("head_pool_snapshot",
         {Arg::arena(state), Arg::i64(floats), Arg::i64(limits_.maxRollback), Arg::of(Kind::Position)});
  Arg cells = Arg::of(Kind::PointerList);
  for (Value cell : op.getCells())
    cells.pointers.push_back(ref(cell));
  call("head_pool_add_unless_pad", {ref(op.getToken()), Arg::i64(op.getPad()), Arg::arena(state), Arg::i64(rows),
                                    Arg::i64(count), Arg::i64(d), cells, weightRows(op.getProbes())});
  // Pooling reads every token; the head's output is computed only when asked for (a head
  // function of its own, on its own scratch).
  const int64_t pooledAt = roundUp(needle_rt::head_finish_scratch_floats(rows, count) * kFloatBytes, kWeightAlign);
  const Arg scratch = Arg::of(Kind::HeadScratch), pooled = Arg::of(Kind::HeadScratch, pooledAt);
  rung_.headScratch = std::max(rung_.headScratch, pooledAt + queries * d * kFloatBytes);
  std::vector<KernelCall> head = {
      {"head_pool_finish",
       {Arg::arena(state), Arg::i64(rows), Arg::i64(count), Arg::i64(d), ref(op.getGain()), ref(op.getQuery()),
        ref(op.getRowBias()), Arg::i64(queries), f32(op.getEps()), scratch, pooled},
       {}}};
  if (op.getKind() == HeadKind::Confidence)
    head.push_back({"head_confidence_into",
                    {pooled, ref(op.getProj()), ref(op.getBias()), Arg::i64(queries * d), Arg::of(Kind::HeadOutput)},
                    {}});
  else
    head.push_back({"head_embedding",
                    {pooled, ref(op.getProj()), Arg::i64(lengthOf(op.getResult())), Arg::i64(queries * d),
                     Arg::of(Kind::HeadOutput)},
                    {}});
  headCalls_[op] = std::move(head);
}

void Lowering::lowerReturn(func::ReturnOp op) {
  auto head = [&](unsigned i, HeadKind kind) {
    auto made = op.getNumOperands() == 3 ? op.getOperand(i).getDefiningOp<HeadOp>() : HeadOp();
    return made && made.getKind() == kind ? made : HeadOp();
  };
  const HeadOp confidence = head(1, HeadKind::Confidence), embedding = head(2, HeadKind::Embedding);
  if (!confidence || !embedding)
    error("@step must return the logits, the confidence head's output and the embedding head's");
  auto calls = [&](HeadOp made) {
    auto it = headCalls_.find(made);
    if (it == headCalls_.end())
      error("internal: @step returns a needle.head that was not lowered");
    return std::move(it->second);
  };
  rung_.facts.logits = bufferOf(op.getOperand(0));
  rung_.confidenceHead = calls(confidence);
  rung_.embeddingHead = calls(embedding);
}

void Lowering::lowerEngram(EngramGatherOp op) {
  const auto [state, bytes] = slot(op, "needle.state");
  const Arg ring = Arg::arena(state, "int32_t"), capacity = Arg::i64(bytes / static_cast<int64_t>(sizeof(int32_t)));
  Arg orders = Arg::of(Kind::Int64List);
  orders.ints.assign(op.getOrders().begin(), op.getOrders().end());
  const Arg orderCount = Arg::i64(static_cast<int64_t>(orders.ints.size())), heads = Arg::i64(op.getHeads());
  const Arg t = Arg::of(Kind::Position);
  call("engram_remember", {ring, capacity, t, ref(op.getToken())});
  if (isa<CqType>(op.getTables().getType())) {
    const Cq w = cq(op.getTables());
    const ArrayRef<int64_t> tables = cast<CqType>(op.getTables().getType()).getShape();
    call("engram_gather", {ring, capacity, t, orders, orderCount, heads, w.packed, w.norms, w.codebook, w.bits,
                           Arg::i64(tables[1]), Arg::i64(tables[2]), ref(op.getResult())});
  } else {
    const ArrayRef<int64_t> tables = shapeOf(op.getTables());
    call("engram_gather_f32", {ring, capacity, t, orders, orderCount, heads, ref(op.getTables()), Arg::i64(tables[1]),
                               Arg::i64(tables[2]), ref(op.getResult())});
  }
}

void Lowering::lowerOp(Operation &operation) {
  auto i64 = Arg::i64;
  outputsOnly_ = outputsOnlyOps_.contains(&operation);
  llvm::TypeSwitch<Operation *>(&operation)
      .Case<WeightOp, arith::ConstantOp, YieldOp>([](Operation *) {})
      .Case([&](CqGatherOp op) {
        const Cq w = cq(op.getTable());
        call("cq_row", {w.packed, w.norms, w.codebook, w.bits, ref(op.getIndex()), i64(w.cols), ref(op.getResult())});
      })
      .Case([&](HadamardOp op) {
        call("hadamard", {ref(op.getInput()), i64(lengthOf(op.getInput())), i64(op.getGroup()), ref(op.getResult())});
      })
      .Case([&](CqMatmulOp op) {
        const Cq w = cq(op.getWeight());
        call("cq_matvec", {w.packed, w.norms, w.codebook, w.bits, i64(w.rows), i64(w.cols), ref(op.getInput()),
                           ref(op.getResult())});
      })
      .Case([&](MatmulOp op) {
        if (!op.getMatrix().getDefiningOp<WeightOp>())
          error("needle.matmul of a computed matrix; run the pipeline (needle-fuse-cq-matmul) first");
        call("matvec", {ref(op.getMatrix()), i64(shapeOf(op.getMatrix())[0]), i64(shapeOf(op.getMatrix())[1]),
                        ref(op.getInput()), ref(op.getResult())});
      })
      .Case([&](EngramGatherOp op) { lowerEngram(op); })
      .Case([&](GatherOp op) {
        call("gather_row",
             {ref(op.getTable()), i64(shapeOf(op.getTable())[1]), ref(op.getIndex()), ref(op.getResult())});
      })
      .Case([&](UnpadRowsOp op) {
        call("unpad_rows",
             {ref(op.getInput()), i64(op.getRows()), i64(lengthOf(op.getInput()) / static_cast<int64_t>(op.getRows())),
              i64(op.getWidth()), ref(op.getResult())});
      })
      .Case([&](ScaleOp op) {
        call("scale", {ref(op.getInput()), i64(lengthOf(op.getInput())), f32(op.getFactor()), ref(op.getResult())});
      })
      .Case([&](LanesInitOp op) {
        call("lanes_init", {ref(op.getInput()), i64(lengthOf(op.getInput())), ref(op.getResult())});
      })
      .Case([&](LaneNormOp op) {
        call("lane_norm", {ref(op.getLanes()), i64(shapeOf(op.getLanes())[1]), f32(op.getEps()), ref(op.getResult())});
      })
      .Case([&](MhcGatesOp op) {
        call("mhc_gates", {ref(op.getPre()), ref(op.getPost()), ref(op.getRes()), ref(op.getA()), ref(op.getBPre()),
                           ref(op.getBPost()), ref(op.getBRes()), i64(op.getPosition()), ref(op.getHPre()),
                           ref(op.getHPost()), ref(op.getMix())});
      })
      .Case([&](LaneReadOp op) {
        call("lane_read", {ref(op.getLanes()), i64(shapeOf(op.getLanes())[1]), ref(op.getHPre()), ref(op.getResult())});
      })
      .Case([&](LaneWriteOp op) {
        call("lane_write", {ref(op.getLanes()), i64(shapeOf(op.getLanes())[1]), ref(op.getHPost()), ref(op.getMix()),
                            ref(op.getUpdate()), ref(op.getResult())});
      })
      .Case([&](LaneMeanOp op) {
        call("lane_mean", {ref(op.getLanes()), i64(shapeOf(op.getLanes())[1]), ref(op.getResult())});
      })
      .Case([&](EngramGateOp op) {
        call("engram_gate", {ref(op.getU()), ref(op.getKey()), ref(op.getValue()), i64(lengthOf(op.getU())),
                             f32(op.getEps()), ref(op.getResult())});
      })
      .Case([&](CausalTapsOp op) {
        const int64_t count = shapeOf(op.getTaps())[0];
        const Arg ring = count > 1 ? Arg::arena(slot(op, "needle.state").first) : Arg::of(Kind::Null);
        call("causal_taps",
             {ref(op.getInput()), i64(lengthOf(op.getInput())), ref(op.getTaps()), i64(count), i64(op.getStride()),
              i64(needle_rt::taps_capacity(count, op.getStride(), limits_.maxRollback)), ring, Arg::of(Kind::Position),
              ref(op.getResult())});
      })
      .Case([&](ZcNormOp op) {
        call("zc_norm", {ref(op.getInput()), ref(op.getScale()), i64(lengthOf(op.getInput())), i64(op.getHeads()),
                         f32(op.getEps()), ref(op.getResult())});
      })
      .Case([&](RopeOp op) {
        const int64_t n = lengthOf(op.getInput()), heads = op.getHeads();
        call("rope_into", {ref(op.getInput()), ref(op.getResult()), i64(heads), i64(n / heads), ref(op.getPosition()),
                           Arg::f64(op.getTheta().convertToDouble())});
      })
      .Case([&](AttentionOp op) {
        const int64_t state = slot(op, "needle.state").first, scratch = slot(op, "needle.scratch").first;
        const int64_t heads = op.getHeads(), kvHeads = op.getKvHeads();
        const int64_t kWidth = lengthOf(op.getKey()), capacity = kvCapacity(op.getWindow(), limits_);
        call("attention", {ref(op.getQuery()), ref(op.getKey()), ref(op.getValue()), i64(heads), i64(kvHeads),
                           i64(lengthOf(op.getQuery()) / heads), i64(lengthOf(op.getValue()) / kvHeads),
                           i64(op.getWindow()), i64(capacity), Arg::of(Kind::Position), Arg::arena(state),
                           Arg::arena(state + capacity * kWidth * static_cast<int64_t>(sizeof(float))),
                           Arg::arena(scratch), ref(op.getResult())});
      })
      .Case([&](SigmoidGateOp op) {
        call("sigmoid_gate",
             {ref(op.getInput()), ref(op.getGate()), i64(lengthOf(op.getInput())), ref(op.getResult())});
      })
      .Case([&](ResidualGateOp op) {
        call("residual_gate_from", {ref(op.getInput()), ref(op.getUpdate()), ref(op.getNorm()), ref(op.getGate()),
                                    i64(lengthOf(op.getInput())), f32(op.getEps()), ref(op.getResult())});
      })
      .Case([&](KronMlpOp op) {
        call("kron_mlp_flat", {i64(lengthOf(op.getInput())),
                               i64(lengthOf(op.getD1())),
                               i64(shapeOf(op.getW1a())[0]),
                               i64(shapeOf(op.getW1b())[0]),
                               ref(op.getNorm()),
                               ref(op.getW1a()),
                               ref(op.getW2a()),
                               ref(op.getW3a()),
                               ref(op.getW1b()),
                               ref(op.getW2b()),
                               ref(op.getW3b()),
                               ref(op.getD1()),
                               ref(op.getD2()),
                               ref(op.getB2()),
                               ref(op.getD3()),
                               ref(op.getD4()),
                               ref(op.getCondV()),
                               ref(op.getCondU()),
                               weight(op.getP1(), "int32_t"),
                               weight(op.getP2(), "int32_t"),
                               ref(op.getInput()),
                               f32(op.getEps()),
                               Arg::arena(slot(op, "needle.scratch").first),
                               ref(op.getResult())});
      })
      .Case([&](BlockUpdateOp op) {
        call("block_update",
             {ref(op.getX1()), ref(op.getMlp()), ref(op.getU()), i64(lengthOf(op.getX1())), ref(op.getResult())});
      })
      .Case([&](BlockOp op) {
        calls_.push_back({{"",
                           {},
                           fmt::format("block {} (source block {}{})", op.getId(), op.getSource(),
                                       op.getGlobal() ? ", global" : "")}});
        Block &body = op.getBody().front();
        lowerBlock(body);
        // The planner gives a block's results the buffers of what it yields.
        auto yield = cast<YieldOp>(body.getTerminator());
        if (bufferOf(yield.getLanes()) != bufferOf(op.getResult()) ||
            bufferOf(yield.getCell()) != bufferOf(op.getCell()))
          error("internal: a block's results are not planned in what it yields");
      })
      .Case([&](HeadOp op) { lowerHead(op); })
      .Case([&](func::ReturnOp op) { lowerReturn(op); })
      .Default([&](Operation *op) {
        error("{} has no kernel; run the pipeline first", op->getName().getStringRef().str());
      });
}

void Lowering::lowerInterface() {
  const Config &c = model_.config;
  auto arena = module_->getAttrOfType<DictionaryAttr>(kArenaAttr);
  auto get = [&](const char *key) { return cast<IntegerAttr>(arena.get(key)).getInt(); };
  ModelFacts &f = rung_.facts;
  f.arenaSize = get("size");
  f.arenaAlign = get("align");
  f.outputsEnd = get("outputs_end");
  f.tokenLog = arena.get("token_log") ? get("token_log") : 0;
  f.maxSeqLen = c.maxSeqLen;
  f.maxRollback = limits_.maxRollback;
  f.vocabSize = c.vocabSize;
  f.embeddingDim = c.embeddingDim;
  f.confidenceBias = model_.floats("confidence.bias")[0];
  f.dModel = c.dModel;
  f.numLayers = c.numLayers;
  for (int64_t source : c.sources())
    f.sourceBlocks.push_back(static_cast<int32_t>(source));
  for (NamedAttribute book : module_->getAttrOfType<DictionaryAttr>(kCodebooksAttr)) {
    const int bits = std::stoi(book.getName().getValue().drop_front(2).str());
    const ArrayRef<float> values = cast<DenseF32ArrayAttr>(book.getValue()).asArrayRef();
    const std::vector<float> codebook(values.begin(), values.end());
    auto [it, inserted] = program_.codebooks.try_emplace(bits, codebook);
    if (!inserted && it->second != codebook)
      error("internal: the rungs of one program have different {}-bit codebooks", bits);
  }
}

/// The top-level ops of @step whose results reach only its return, and that keep no state: only
/// the last token of a batch needs them (a head's output is not in the step: lowerHead).
llvm::DenseSet<Operation *> outputsOnlyOps(func::FuncOp step) {
  llvm::DenseSet<Operation *> only;
  for (Operation &op : llvm::reverse(step.getBody().front())) {
    if (op.getNumResults() == 0 || isa<BlockOp, HeadOp, WeightOp, arith::ConstantOp>(op) || op.hasAttr("needle.state"))
      continue;
    if (llvm::all_of(op.getUsers(), [&](Operation *user) { return isa<func::ReturnOp>(user) || only.contains(user); }))
      only.insert(&op);
  }
  return only;
}

/// Up to batch_ tokens per call of @step: each token gets its own copy of the scratch.
void Lowering::planBatches() {
  ModelFacts &f = rung_.facts;
  f.batch = batch_;
  f.tokenStride = f.arenaSize - f.outputsEnd; // both multiples of the arena's alignment
  f.arenaSize = f.outputsEnd + batch_ * f.tokenStride;
  rung_.step = planStages(calls_, f.outputsEnd, f.tokenStride, batch_);
}

void Lowering::run() {
  auto step = module_.lookupSymbol<func::FuncOp>("step");
  if (!step)
    error("the module has no func.func @step");
  limits_ = sessionLimits(module_);
  if (!module_->getAttrOfType<DictionaryAttr>(kArenaAttr) || !limits_.maxSeqLen)
    error("the module has no {}; run needle-plan-session first", kArenaAttr);
  // The weights' layout follows program order, not the order a call's arguments are evaluated in.
  step.walk([&](WeightOp op) {
    const bool probes = llvm::any_of(op->getUses(), [](OpOperand &use) {
      auto head = dyn_cast<HeadOp>(use.getOwner());
      return head && use.get() == head.getProbes();
    });
    if (isa<CqType>(op.getType()))
      cq(op.getResult());
    else if (probes)
      weightRows(op.getResult());
    else
      weight(op.getResult());
  });
  outputsOnlyOps_ = outputsOnlyOps(step);
  lowerBlock(step.getBody().front());
  lowerInterface();
  planBatches();
  program_.rungs.push_back(std::move(rung_));
}

} // namespace

int64_t WeightStore::add(std::vector<uint8_t> &weights, const void *data, size_t bytes, const std::string &shape) {
  const auto *begin = static_cast<const uint8_t *>(data);
  uint64_t hash = 0xcbf29ce484222325u ^ bytes; // FNV-1a over the length and the bytes
  for (size_t i = 0; i < bytes; ++i)
    hash = (hash ^ begin[i]) * 0x100000001b3u;
  std::vector<Stored> &same = stored_[hash];
  for (const Stored &stored : same)
    if (stored.bytes == bytes && stored.shape == shape &&
        std::equal(begin, begin + bytes, weights.begin() + stored.offset))
      return stored.offset;
  same.push_back({appendWeights(weights, data, bytes), bytes, shape});
  return same.back().offset;
}

void lowerRung(ModuleOp module, const Model &model, const std::string &backend, int64_t batch, KernelProgram &program,
               WeightStore &store) {
  Lowering(module, model, backend, batch, program, store).run();
}

KernelProgram lowerToKernelCalls(ModuleOp module, const Model &model, const std::string &backend, int64_t batch) {
  KernelProgram program;
  program.rungs.clear();
  WeightStore store;
  lowerRung(module, model, backend, batch, program, store);
  return program;
}

} // namespace needle
