#ifndef NEEDLE_PASSES_TD
#define NEEDLE_PASSES_TD

include "mlir/Pass/PassBase.td"

def SliceDepth : Pass<"needle-slice-depth", "mlir::ModuleOp"> {
  let summary = "Keep the blocks of one ladder depth";
  let description = [{
    The IR form of ladder slicing (docs/model.md, The ladder): keeps the blocks
    sorted(ladder_order[:depth]), drops the others (their lanes pass through, their cells
    leave the heads), renumbers block ids (= lane positions), the mhc_gates positions and the
    engram sites, and restricts and renumbers `needle.ladder_order`. Global attention, weights
    and head rows travel with their block (they are named by source block). Rejects a depth
    outside 2..L.
  }];
  let options = [Option<"depth", "depth", "int64_t", "0", "the ladder depth to keep">];
  let dependentDialects = ["::needle::ir::NeedleDialect"];
}

def FoldHadamard : Pass<"needle-fold-hadamard", "mlir::ModuleOp"> {
  let summary = "Remove every online Hadamard rotation algebra allows";
  let description = [{
    Every CQ matmul reads its input rotated per group of 128. This pass shares one rotation
    among all ops rotating the same value (q/k/v/gate read s; the three Φ read nx), cancels
    rotate-then-rotate (H·H = I: a decoded engram row fed to the key/value matmuls needs no
    transform at all), and rotates constants at compile time. `needlec --stats` reports the
    rotations per token before and after.
  }];
  let dependentDialects = ["::needle::ir::NeedleDialect"];
}

def FuseCqMatmul : Pass<"needle-fuse-cq-matmul", "mlir::ModuleOp"> {
  let summary = "needle.matmul of needle.cq_dequant becomes needle.cq_matmul";
  let description = [{
    Rewrites `matmul(cq_dequant(w), x)` into `cq_matmul(w, x)`, which reads the packed
    indices and norms directly: after it no float weight matrix is materialized.
  }];
  let dependentDialects = ["::needle::ir::NeedleDialect"];
}

#endif // NEEDLE_PASSES_TD
