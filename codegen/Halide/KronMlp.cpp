#include "codegen/Halide/Bitcode.h"
#include "codegen/Halide/Kernels.h"

namespace needle {

using namespace Halide;

namespace {

/// K(z) = waᵀ Z wb, Z = z as [ba][bb] row-major, as needle_rt::kronecker sums it: T = Z wb over b
/// in order, then waᵀ T over a in order. wa [ba][ba], wb [bb][bb], row-major.
Func kronecker(const Func &z, const ImageParam &wa, const ImageParam &wb, int ba, int bb, const std::string &name,
               int lanes) {
  Var c("c"), a("a"), r("r"), i("i");
  RDom b(0, bb, "b"), as(0, ba, "as");
  Func t(name + "_t"), o(name + "_o"), k(name);
  t(c, a) = 0.0f;
  t(c, a) += z(a * bb + b) * wb(b * bb + c);
  o(c, r) = 0.0f;
  o(c, r) += wa(as * ba + r) * t(c, as);
  k(i) = o(i % bb, i / bb);
  for (Func f : {t, o}) {
    f.compute_root().vectorize(c, lanes, TailStrategy::GuardWithIf);
    f.update().vectorize(c, lanes, TailStrategy::GuardWithIf);
  }
  k.compute_root().vectorize(i, lanes, TailStrategy::GuardWithIf);
  return k;
}

} // namespace

void HalideKernelSet::addKronMlp(const KronMlpShape &shape, const std::string &name) {
  const int dModel = static_cast<int>(shape.dModel), n = static_cast<int>(shape.n);
  const int ba = static_cast<int>(shape.ba), bb = static_cast<int>(shape.bb);
  auto vector = [](const char *name) { return ImageParam(Float(32), 1, name); };
  ImageParam z0 = vector("z"), cond = vector("cond"), d1 = vector("d1"), d2 = vector("d2"), b2 = vector("b2");
  ImageParam d3 = vector("d3"), d4 = vector("d4"), w1a = vector("w1a"), w2a = vector("w2a"), w3a = vector("w3a");
  ImageParam w1b = vector("w1b"), w2b = vector("w2b"), w3b = vector("w3b");
  ImageParam p1(Int(32), 1, "p1"), p2(Int(32), 1, "p2");
  Var i("i");

  // As needle_rt::kron_mlp after its conditioning: K_1, gather p1, silu, K_2, gather p2, K_3.
  Func scaled("scaled"), gated("gated"), permuted("permuted"), out("out");
  scaled(i) = z0(i) * d1(i);
  const Func k1 = kronecker(scaled, w1a, w1b, ba, bb, "k1", lanes_);
  const Expr pre = d2(i) * cond(i) * k1(clamp(p1(i), 0, n - 1)) + b2(i);
  gated(i) = pre * (1.0f / (1.0f + exp(-pre)));
  const Func k2 = kronecker(gated, w2a, w2b, ba, bb, "k2", lanes_);
  permuted(i) = k2(clamp(p2(i), 0, n - 1)) * d3(i);
  const Func k3 = kronecker(permuted, w3a, w3b, ba, bb, "k3", lanes_);
  out(i) = d4(i) * k3(i);

  for (Func f : {scaled, gated, permuted})
    f.compute_root().vectorize(i, lanes_, TailStrategy::GuardWithIf);
  out.vectorize(i, lanes_, TailStrategy::GuardWithIf);

  for (ImageParam *p : {&z0, &cond, &d1, &d2, &b2, &d3, &p1, &p2})
    p->dim(0).set_bounds(0, n).set_stride(1);
  d4.dim(0).set_bounds(0, dModel).set_stride(1);
  for (ImageParam *p : {&w1a, &w2a, &w3a})
    p->dim(0).set_bounds(0, ba * ba).set_stride(1);
  for (ImageParam *p : {&w1b, &w2b, &w3b})
    p->dim(0).set_bounds(0, bb * bb).set_stride(1);
  out.output_buffer().dim(0).set_bounds(0, dModel).set_stride(1);

  modules_->modules.push_back(
      kernelModule(out, {z0, cond, d1, d2, b2, d3, d4, w1a, w2a, w3a, w1b, w2b, w3b, p1, p2}, target_, name));
}

} // namespace needle
