// The one IR: a hash-consed node (op, dtype, shape, sources, argument) used from the
// tensor graph down to the kernel AST.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/layout.h"

namespace loom {

// X(name, arity, kind). Arity -1: variable. Kinds:
//   Flat   values of a whole storage, shape {nbytes}: Empty, Data, Store, Scatter, Extern
//   Leaf   values defined by their coordinates: Const, Iota, Rand*, Param
//   Move   Load (flat -> shaped through a View), Reindex (shaped -> shaped), Gather (flat
//          -> shaped at computed element indices)
//   Unary/Binary/Ternary  elementwise, same shape in and out
//   Reduce, Scan
#define LOOM_OPS(X)                                                                  \
  X(Empty, 0, Flat) X(Data, 0, Flat) X(Store, 2, Flat) X(Scatter, 3, Flat)           \
  X(Extern, -1, Flat)                                                                \
  X(Const, 0, Leaf) X(Iota, 0, Leaf) X(RandUniform, 0, Leaf) X(RandNormal, 0, Leaf)  \
  X(Param, 0, Leaf)                                                                  \
  X(Load, 1, Move) X(Reindex, 1, Move) X(Gather, 2, Move)                            \
  X(Cast, 1, Unary) X(Bitcast, 1, Unary)                                             \
  X(Neg, 1, Unary) X(Abs, 1, Unary) X(Exp, 1, Unary) X(Exp2, 1, Unary)               \
  X(Expm1, 1, Unary) X(Log, 1, Unary) X(Log2, 1, Unary) X(Log10, 1, Unary)           \
  X(Log1p, 1, Unary) X(Sqrt, 1, Unary) X(Rsqrt, 1, Unary) X(Sin, 1, Unary)           \
  X(Cos, 1, Unary) X(Tan, 1, Unary) X(Asin, 1, Unary) X(Acos, 1, Unary)              \
  X(Atan, 1, Unary) X(Sinh, 1, Unary) X(Cosh, 1, Unary) X(Tanh, 1, Unary)            \
  X(Sigmoid, 1, Unary) X(Relu, 1, Unary) X(Erf, 1, Unary) X(Floor, 1, Unary)         \
  X(Lgamma, 1, Unary) X(Digamma, 1, Unary) X(Trigamma, 1, Unary)                     \
  X(Acosh, 1, Unary) X(Asinh, 1, Unary) X(Atanh, 1, Unary) X(Erfc, 1, Unary)          \
  X(Erfinv, 1, Unary) X(Ndtri, 1, Unary) X(I0, 1, Unary) X(I0e, 1, Unary)            \
  X(I1, 1, Unary) X(I1e, 1, Unary) X(FrexpMantissa, 1, Unary)                        \
  X(FrexpExponent, 1, Unary) X(Erfcx, 1, Unary) X(Bessel, 1, Unary)                  \
  X(NormalCdf, 1, Unary)                                                             \
  X(Ceil, 1, Unary) X(Round, 1, Unary) X(Trunc, 1, Unary) X(Frac, 1, Unary)          \
  X(Sign, 1, Unary) X(Reciprocal, 1, Unary) X(IsNan, 1, Unary) X(IsInf, 1, Unary)    \
  X(IsFinite, 1, Unary) X(LogicalNot, 1, Unary) X(BitwiseNot, 1, Unary)              \
  X(Check, 1, Unary) X(Conj, 1, Unary) X(Real, 1, Unary) X(Imag, 1, Unary)          \
  X(Add, 2, Binary) X(Sub, 2, Binary) X(Mul, 2, Binary) X(Div, 2, Binary)            \
  X(FloorDiv, 2, Binary) X(TruncDiv, 2, Binary) X(Pow, 2, Binary)                    \
  X(Remainder, 2, Binary) X(Fmod, 2, Binary) X(Maximum, 2, Binary)                   \
  X(Minimum, 2, Binary) X(Atan2, 2, Binary) X(Eq, 2, Binary) X(Ne, 2, Binary)        \
  X(Lt, 2, Binary) X(Le, 2, Binary) X(Gt, 2, Binary) X(Ge, 2, Binary)                \
  X(LogicalAnd, 2, Binary) X(LogicalOr, 2, Binary) X(LogicalXor, 2, Binary)          \
  X(BitAnd, 2, Binary) X(BitOr, 2, Binary) X(BitXor, 2, Binary) X(Shl, 2, Binary)    \
  X(Shr, 2, Binary) X(Complex, 2, Binary) X(Zeta, 2, Binary)                         \
  X(CopySign, 2, Binary) X(NextAfter, 2, Binary) X(Gcd, 2, Binary)                  \
  X(Polynomial, 2, Binary) X(Igamma, 2, Binary) X(LogAddExp, 2, Binary)              \
  X(Where, 3, Ternary) X(MulAdd, 3, Ternary)                                         \
  X(Reduce, 1, Reduce) X(Scan, 1, Scan)

enum class Op : uint8_t {
#define X(name, arity, kind) name,
  LOOM_OPS(X)
#undef X
};

enum class OpKind : uint8_t { Flat, Leaf, Move, Unary, Binary, Ternary, Reduce, Scan };

const char* op_name(Op op);
OpKind op_kind(Op op);
int op_arity(Op op);

// LogSumExp (scans only): log(exp(acc) + exp(x)), the CPU's logcumsumexp step.
enum class ReduceKind : uint8_t {
  Sum, Prod, Max, Min, ArgMax, ArgMin, Any, All, LogSumExp
};
const char* reduce_name(ReduceKind k);

// torch.special's orthogonal polynomials, in the order of c_polynomial_prelude's functions.
enum class PolynomialKind : int64_t {
  ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW, ShiftedChebyshevT, ShiftedChebyshevU,
  ShiftedChebyshevV, ShiftedChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP
};

// torch.special's Bessel functions of integer order and Airy's Ai (codegen/bessel_c.cpp).
// K0e and K1e are e^x K0(x) and e^x K1(x).
enum class BesselKind : int64_t { J0, J1, Y0, Y1, K0, K1, K0e, K1e, AiryAi };

struct ReduceArg {
  ReduceKind kind;
  std::vector<int> axes;  // Reduce: reduced dims (kept as size 1). Scan: one axis.
  bool operator==(const ReduceArg& o) const { return kind == o.kind && axes == o.axes; }
};

// Check: a value the kernel passes on once it holds, or else stops and reports fault
// message `msg` (core/fault.h). Bound: an index that must lie in [0, size) (or [-size, size),
// wrapped, when `wrap`). NonZero: a divisor (of any integer dtype) other than 0.
// NonNegative: a float at least 0 (not NaN), as normal's tensor std.
enum class CheckKind : uint8_t { Bound, NonZero, NonNegative };
struct CheckArg {
  int64_t size;
  bool wrap;
  int msg;
  CheckKind kind = CheckKind::Bound;
  bool operator==(const CheckArg& o) const {
    return size == o.size && wrap == o.wrap && msg == o.msg && kind == o.kind;
  }
};

struct RandArg {
  uint64_t seed, offset;
  bool operator==(const RandArg& o) const { return seed == o.seed && offset == o.offset; }
};

// Empty: a unique id. Iota: the axis. Param: the kernel slot. Data: none (the memory).
// Polynomial: which one (PolynomialKind), of (x, degree). Bessel: which one (BesselKind).
// Igamma: 0 for the lower regularized incomplete gamma P(a, x), 1 for the upper Q(a, x).
// Scatter: -1 to assign, else the ReduceKind that combines with the old value, with
// kScatterScaled set for index_add's alpha (graph.h's scatter).
constexpr int64_t kScatterScaled = 1 << 8;
struct ExternArg;  // core/extern.h
using Arg = std::variant<std::monostate, int64_t, Scalar, View, IndexMap, ReduceArg, RandArg,
                         CheckArg, std::shared_ptr<ExternArg>>;

struct Memory;
struct Node;
using NodeRef = std::shared_ptr<Node>;
// A node's sources: up to 3 inline (NOTE [Inline shapes]).
using Sources = SmallVec<NodeRef, 3>;

struct Node : std::enable_shared_from_this<Node> {
  Op op;
  DType dtype;
  Shape shape;
  Sources src;
  Arg arg;
  size_t hash = 0;
  bool interned = false;
  // Scratch of one graph walk at a time, under the engine lock (a kernel plan's key): the
  // walk that last numbered this node, and its number there. Saves the walk a hash map.
  // Unique to this node for the life of the process (make_node and make_data set it): a
  // memo keyed by address checks it, since a node made later may take a dead node's
  // address (NOTE [Node maps]).
  uint64_t serial = 0;
  mutable uint32_t walk = 0;
  mutable int32_t walk_id = 0;
  // How deep realizing this value would recurse (fusion follows loads into pending
  // producers); graph.h bounds it by realizing early. A chain of writes adds nothing:
  // chains are realized in a loop.
  int32_t depth = 0;
  // Store and Scatter: the buffer written into, alive while this does not expire.
  std::weak_ptr<const void> owner;
  // Set once a flat value has been computed; its sources are dropped then, and the node
  // leaves the intern table (its memory is its identity from then on).
  std::shared_ptr<Memory> realized;
  // A value with reductions already computed into storage (scratch storage fusion made to
  // read it through a broadcast, or a whole store of it): the load of that storage, which
  // every later kernel reads instead while the value lives (fuse.cpp, realize_store).
  NodeRef stored;
  // NOTE [Cohorts] (schedule/fuse.cpp): values over the same loops that ops know are read
  // together (max pooling's values and indices); a kernel storing this one stores those
  // still pending beside it.
  std::vector<std::weak_ptr<Node>> cohort;

  Node() = default;
  // Moves its parts in: a default-constructed node assigned them afterwards built and
  // destroyed an empty Arg, and moved a View twice (a tenth of a tiny op's node making).
  Node(Op o, DType t, Shape&& s, Sources&& in, Arg&& a)
      : op(o), dtype(t), shape(std::move(s)), src(std::move(in)), arg(std::move(a)) {}
  ~Node();
  const View& view() const { return std::get<View>(arg); }
  const ReduceArg& reduce_arg() const { return std::get<ReduceArg>(arg); }
  int64_t int_arg() const { return std::get<int64_t>(arg); }
};

// Builds a node, returning the existing one when an equal node is alive.
NodeRef make_node(Op op, DType dtype, Shape shape, Sources src, Arg arg = {});
// A flat value that already lives in memory.
NodeRef make_data(std::shared_ptr<Memory> mem);
// Marks a flat value computed into `mem`; drops its sources.
void set_realized(const NodeRef& n, std::shared_ptr<Memory> mem);
size_t live_node_count();

std::string arg_str(const Arg& a);
std::string node_str(const Node& n);  // one line, for LOOM_DEBUG
std::string graph_str(const NodeRef& root);  // the DAG below root, one node per line

}  // namespace loom
