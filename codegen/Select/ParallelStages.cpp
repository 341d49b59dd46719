#include "codegen/Select/ParallelStages.h"

#include "Support/RoundUp.h"
#include "codegen/Select/KernelRegistry.h"
#include "codegen/Select/WeightLayouts.h"
#include "runtime/needle_contract.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace needle {

namespace {

using Kind = StepStage::Kind;

/// Bytes [offset, offset + bytes) of the arena; per token when in the scratch (offset at or past
/// ModelFacts::outputsEnd), token i's copy i·tokenStride bytes on.
struct Region {
  int64_t offset, bytes;
};

struct Access {
  Region read, written;
};

/// What a CQ product reads (x_rot) and writes (y) of the arena, for token 0 (or the last token).
Access accessOf(const KernelCall &call) {
  const int64_t padded = needle_rt::cq_padded_cols(argValue(call, "cols"));
  return {{argValue(call, "x_rot"), padded * 4}, {argValue(call, "y"), argValue(call, "rows") * 4}};
}

/// Whether a and b overlap for some pair of tokens of a stage of `tokens` tokens at most.
bool overlap(Region a, Region b, const ModelFacts &facts, int64_t tokens) {
  const bool aScratch = a.offset >= facts.outputsEnd, bScratch = b.offset >= facts.outputsEnd;
  if (aScratch != bScratch)
    return false;
  const int64_t apart = aScratch ? tokens - 1 : 0;
  for (int64_t d = -apart; d <= apart; ++d) {
    const int64_t shifted = b.offset + d * facts.tokenStride;
    if (a.offset < shifted + b.bytes && shifted < a.offset + a.bytes)
      return true;
  }
  return false;
}

/// Whether calls a and b may run in either order, or at once.
bool independent(const KernelCall &a, const KernelCall &b, const ModelFacts &facts, int64_t tokens) {
  const Access x = accessOf(a), y = accessOf(b);
  return !overlap(x.written, y.read, facts, tokens) && !overlap(x.written, y.written, facts, tokens) &&
         !overlap(y.written, x.read, facts, tokens);
}

/// How a call reads the weights it names: as a CQ product that planParallelStages cuts into
/// panels (every rung cuts a matrix alike: its panels depend on its rows alone), or otherwise.
std::string readerOf(const KernelCall &call, StepStage::Kind stage) {
  return isCqMatvec(call) && stage != StepStage::Kind::EachToken ? "panels" : call.kernel;
}

/// The panels of the program's CQ products, cut so that re-laying one in place changes nothing
/// another call reads.
class PanelCutter {
public:
  explicit PanelCutter(KernelProgram &program) : program_(program) {
    auto add = [&](const KernelCall &call, StepStage::Kind stage) {
      for (const KernelArg &arg : call.args)
        if (arg.kind == KernelArg::Kind::Weight)
          readers_[arg.value].insert(readerOf(call, stage));
    };
    for (const RungProgram &rung : program.rungs) {
      for (const StepStage &stage : rung.step)
        for (const KernelCall &call : stage.calls)
          add(call, stage.kind);
      for (const auto *head : {&rung.confidenceHead, &rung.embeddingHead})
        for (const KernelCall &call : *head)
          add(call, StepStage::Kind::EachToken);
    }
  }

  /// `call` (row-major, the file's layout) as one call per panel of rows. Each panel's weights
  /// are re-laid as a matrix of their own later. A matrix that cq_row gathers rows from too (the
  /// tied embedding) is cut in place, and the gathers read its rows from the panels (gatherRows);
  /// one that any other call reads is cut from a copy, which every rung shares, so that re-laying a
  /// panel in place cannot change what the other call reads beyond the matrix's first bytes.
  std::vector<KernelCall> cut(const KernelCall &call) {
    const std::vector<int64_t> rows = panelRows(argValue(call, "rows"));
    const std::set<std::string> panelsAndRows = {"panels", "cq_row"};
    const bool gathered =
        readers_[argValue(call, "packed")] == panelsAndRows && readers_[argValue(call, "norms")] == panelsAndRows;
    if (rows.size() == 1 && !gathered)
      return {call};
    const int64_t cols = argValue(call, "cols"), bits = argValue(call, "bits");
    const int64_t rowBytes = needle_rt::cq_row_bytes(cols, static_cast<int>(bits));
    const int64_t rowNorms = 2 * needle_rt::cq_groups(cols);
    const int64_t allRows = argValue(call, "rows");
    const int64_t packed = gathered ? argValue(call, "packed") : copied(argValue(call, "packed"), allRows * rowBytes);
    const int64_t norms = gathered ? argValue(call, "norms") : copied(argValue(call, "norms"), allRows * rowNorms);
    std::vector<KernelCall> panels;
    int64_t first = 0;
    for (int64_t count : rows) {
      KernelCall panel = call;
      argument(panel, "packed").value = packed + first * rowBytes;
      argument(panel, "norms").value = norms + first * rowNorms;
      argument(panel, "rows").value = count;
      argument(panel, "y").value += first * 4;
      if (first > 0)
        panel.comment.clear();
      panels.push_back(std::move(panel));
      first += count;
    }
    if (gathered)
      gathered_.try_emplace(packed, panels);
    return panels;
  }

  /// Points each cq_row gather of a matrix cut in place at its panels (cq_row_panels), each in
  /// the file's layout until a layout that re-lays it says otherwise (relayCqWeights).
  void gatherRows() {
    forEachCall(program_, [&](KernelCall &call) {
      if (call.kernel != "cq_row")
        return;
      const auto it = gathered_.find(argValue(call, "packed"));
      if (it == gathered_.end())
        return;
      KernelArg packed = KernelArg::of(KernelArg::Kind::PointerList), norms = packed;
      packed.element = "uint8_t";
      norms.element = "uint16_t";
      KernelArg panels = KernelArg::of(KernelArg::Kind::Int64List);
      for (const KernelCall &panel : it->second) {
        packed.pointers.push_back(argument(panel, "packed"));
        norms.pointers.push_back(argument(panel, "norms"));
        panels.ints.insert(panels.ints.end(), {argValue(panel, "rows"), needle_rt::cq_panel_file, 0});
      }
      const auto count = static_cast<int64_t>(it->second.size());
      call = {std::string(kGatherFromPanels),
              {packed, norms, panels, KernelArg::i64(count), argument(call, "codebook"), argument(call, "bits"),
               argument(call, "row"), argument(call, "cols"), argument(call, "out")},
              call.comment};
    });
  }

private:
  /// Weights [offset, offset + bytes), or a copy of them at the end of the program's weights
  /// when a call that does not read them as panels reads them too.
  int64_t copied(int64_t offset, int64_t bytes) {
    if (readers_[offset].size() < 2)
      return offset;
    auto [it, inserted] = copies_.try_emplace(offset, 0);
    if (inserted) {
      const std::vector<uint8_t> copy(program_.weights.begin() + offset, program_.weights.begin() + offset + bytes);
      it->second = appendWeights(program_.weights, copy.data(), copy.size());
    }
    return it->second;
  }

  KernelProgram &program_;
  std::map<int64_t, std::set<std::string>> readers_;    // how each weight offset is read (readerOf)
  std::map<int64_t, int64_t> copies_;                   // by the original's offset
  std::map<int64_t, std::vector<KernelCall>> gathered_; // the panels of each matrix cq_row reads, by its offset
};

/// Whether `arg` names no buffer of the arena but per-token scratch, pointer lists included.
bool scratchOnly(const KernelArg &arg, const ModelFacts &facts) {
  if (arg.kind == KernelArg::Kind::Arena && arg.value < facts.outputsEnd)
    return false;
  return std::all_of(arg.pointers.begin(), arg.pointers.end(), [&](auto &p) { return scratchOnly(p, facts); });
}

/// An EachToken stage whose calls touch no state and no output, only each token's own scratch:
/// its tokens are independent tasks. Worth a pool only with enough work per token: a Kronecker
/// MLP, or kTokenStageMinCalls calls.
bool tokensAreTasks(const StepStage &stage, const ModelFacts &facts) {
  const bool independent = std::all_of(stage.calls.begin(), stage.calls.end(), [&](const KernelCall &call) {
    return std::all_of(call.args.begin(), call.args.end(), [&](auto &arg) { return scratchOnly(arg, facts); });
  });
  const bool mlp = std::any_of(stage.calls.begin(), stage.calls.end(),
                               [](const KernelCall &call) { return call.kernel == "kron_mlp_flat"; });
  return independent && (mlp || static_cast<int64_t>(stage.calls.size()) >= kTokenStageMinCalls);
}

int64_t weightsOf(const StepStage &stage) {
  int64_t weights = 0;
  for (const KernelCall &call : stage.calls)
    weights += argValue(call, "rows") * argValue(call, "cols");
  return weights;
}

/// The rung's stages, each CQ product cut into panels by `cutter` (docs/codegen.md, "Parallel stages").
void planParallelStages(RungProgram &rung, PanelCutter &cutter) {
  const ModelFacts &facts = rung.facts;
  std::vector<StepStage> stages;
  for (StepStage &stage : rung.step) {
    if (stage.kind == Kind::EachToken) {
      stage.parallel = facts.batch > 1 && tokensAreTasks(stage, facts);
      stages.push_back(std::move(stage));
      continue;
    }
    const int64_t tokens = stage.kind == Kind::Batched ? facts.batch : 1;
    for (KernelCall &call : stage.calls) {
      StepStage *last = stages.empty() || stages.back().kind != stage.kind ? nullptr : &stages.back();
      if (!isCqMatvec(call)) {
        if (!last || last->parallel)
          last = &stages.emplace_back(StepStage{stage.kind, {}, false});
        last->calls.push_back(std::move(call));
        continue;
      }
      const bool joins = last && last->parallel && std::all_of(last->calls.begin(), last->calls.end(), [&](auto &a) {
                           return independent(a, call, facts, tokens);
                         });
      std::vector<KernelCall> panels = cutter.cut(call);
      if (!joins)
        last = &stages.emplace_back(StepStage{stage.kind, {}, true});
      for (KernelCall &panel : panels)
        last->calls.push_back(std::move(panel));
    }
  }
  for (StepStage &stage : stages)
    if (stage.parallel && stage.kind != Kind::EachToken &&
        (stage.calls.size() < 2 || weightsOf(stage) < kParallelMinWeights))
      stage.parallel = false;
  rung.step = std::move(stages);
}

} // namespace

std::vector<int64_t> panelRows(int64_t rows) {
  const int64_t count = std::min(kMostPanels, rows / kPanelRows);
  if (count < 2)
    return {rows};
  const int64_t each = roundUp((rows + count - 1) / count, kPanelMultiple);
  std::vector<int64_t> panels;
  for (int64_t first = 0; first < rows; first += each)
    panels.push_back(std::min(each, rows - first));
  return panels;
}

void planParallelStages(KernelProgram &program) {
  PanelCutter cutter(program);
  for (RungProgram &rung : program.rungs)
    planParallelStages(rung, cutter);
  cutter.gatherRows();
}

} // namespace needle
