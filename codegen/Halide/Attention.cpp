#include "codegen/Halide/Bitcode.h"
#include "codegen/Halide/Kernels.h"

#include <cmath>

namespace needle {

using namespace Halide;

void HalideKernelSet::addAttention(const AttentionShape &shape, const std::string &name) {
  const int kvHeads = static_cast<int>(shape.kvHeads), dqk = static_cast<int>(shape.dqk);
  const int dv = static_cast<int>(shape.dv);
  ImageParam q(Float(32), 1, "q"), keys(Float(32), 3, "k_cache"), values(Float(32), 3, "v_cache");
  Param<int32_t> kv("kv_head"), first("first_slot"), count("count");
  Var i("i"), e("e");

  // The i-th visible slot: first + i, never past the ring's end (the bridge's promise).
  auto slot = [&](const Expr &visible) { return first + visible; };
  const float invSqrt = 1.0f / std::sqrt(static_cast<float>(dqk));
  RDom d(0, dqk, "d"), p(0, count, "p");
  Func score("score"), top("top"), weight("weight"), acc("acc"), out("out");
  score(i) = 0.0f;
  score(i) += q(d) * keys(slot(i), d, kv);
  // As needle_rt::attention: max-shifted exponentials, one division. acc(dv) sums the
  // exponentials themselves, so one pass over the positions makes both.
  top() = Float(32).min();
  top() = max(top(), score(p) * invSqrt);
  weight(i) = exp(score(i) * invSqrt - top());
  acc(e) = 0.0f;
  acc(e) += weight(p) * select(e == dv, 1.0f, values(min(e, dv - 1), kv, slot(p)));
  out(e) = acc(e) * (1.0f / acc(dv));

  // The scores are the pipeline's first output, in the caller's scratch (count <= capacity floats): a
  // vector of consecutive slots at a time, over d in order (the keys are stored transposed, so
  // each d is one contiguous vector load). Then per position its
  // exponential once, and the sums a vector of e at a time.
  const int lanes = lanes_;
  score.vectorize(i, lanes, TailStrategy::GuardWithIf);
  score.update().reorder(i, d).vectorize(i, lanes, TailStrategy::GuardWithIf);
  top.compute_root();
  acc.compute_root().vectorize(e, lanes, TailStrategy::GuardWithIf);
  acc.update().vectorize(e, lanes, TailStrategy::GuardWithIf);
  weight.compute_at(acc, p);
  out.vectorize(e, lanes, TailStrategy::GuardWithIf);

  q.dim(0).set_bounds(0, dqk).set_stride(1);
  keys.dim(0).set_min(0).set_stride(1); // the ring's capacity: any
  keys.dim(1).set_bounds(0, dqk);
  keys.dim(2).set_bounds(0, kvHeads);
  values.dim(0).set_bounds(0, dv).set_stride(1);
  values.dim(1).set_bounds(0, kvHeads).set_stride(dv);
  values.dim(2).set_min(0).set_stride(kvHeads * dv);
  score.output_buffer().dim(0).set_min(0).set_stride(1);
  out.output_buffer().dim(0).set_bounds(0, dv).set_stride(1);

  modules_->modules.push_back(
      kernelModule(Pipeline(std::vector<Func>{score, out}), {q, keys, values, kv, first, count}, target_, name));
}

} // namespace needle
