#ifndef NEEDLE_CODEGEN_PASSES_TD
#define NEEDLE_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def PlanSession : Pass<"needle-plan-session", "mlir::ModuleOp"> {
  let summary = "Give every byte of a session a fixed place in one arena";
  let description = [{
    Plans the memory of one session of @step at compile time, so `arena_size` is a constant
    and nothing is allocated at run time. The arena is laid out as

        [header | token log | state of every stateful op | outputs | scratch]

    - header: 64 bytes (the position counter and the session's bookkeeping);
    - token log: with the module attribute `needle.token_log` (a rung of an object of several
      depths), one int32 per position, 4·max_seq_len bytes rounded to 64, from which the C
      interface feeds a conversation again at another depth; absent, no bytes;
    - state, in program order, each 64-byte aligned, recorded on the op as
      `needle.state = array<i64: offset, bytes>`: the KV ring of each `needle.attention`
      (capacity = its window, or max_seq_len for a global block; at most max_seq_len), the
      ring of each `needle.causal_taps` (stride·(taps−1) past inputs), the token ring of each
      `needle.engram_gather` (max(orders) tokens), the online pooling state of each
      `needle.head`; the module attribute `needle.max_rollback = K` (absent: 0) makes the
      local, tap and token rings K positions longer and follows each head's state with K
      snapshots of it, so a session can go back K positions;
    - outputs: the values @step returns that live in the arena (the logits), which must
      outlive the call; a `needle.head`'s result gets no buffer, as the C interface computes
      it when asked;
    - scratch: every other intermediate vector, and the kernels' own scratch
      (`needle.scratch = array<i64: offset, bytes>`), placed first-fit by liveness so values
      whose lifetimes do not overlap share bytes.

    Each op's results get `needle.buffers = array<i64: ...>` (one arena offset per result);
    a block's arguments share their operands' buffers and its results share what it yields.
    The module gets `needle.arena = {align, size, state_end, outputs_end}` (byte counts), and
    `token_log` (its offset) when it keeps one. The
    module attribute `needle.max_seq_len` bounds the KV rings (`needlec --max-seq`).
  }];
  let dependentDialects = ["::needle::ir::NeedleDialect"];
}

#endif // NEEDLE_CODEGEN_PASSES_TD
