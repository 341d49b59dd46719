// needle_rt, the rungs of an object: which depth's facts and step serve a session.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Every rung in one object (docs/c-interface.md): an object holds the step of each depth from
// min_depth to max_depth, and each session runs at the depth its header names. An object of one
// depth is a ladder of one rung. Both backends call these with the ladder they print.
// ---------------------------------------------------------------------------------------------

/// The rungs of an object, each array indexed by depth - min_depth.
struct Ladder {
  int64_t min_depth, max_depth;
  const ModelFacts *facts;
  const StepFunction *steps;
  const HeadFunction *confidence_heads, *embedding_heads;
};

/// What serves one depth.
struct Rung {
  const ModelFacts &facts;
  StepFunction step;
  HeadFunction confidence_head, embedding_head;
};

inline bool holds_depth(const Ladder &l, int64_t depth) { return l.min_depth <= depth && depth <= l.max_depth; }

/// The rung at `depth`, which the ladder holds.
inline Rung rung_at(const Ladder &l, int64_t depth) {
  const int64_t i = depth - l.min_depth;
  return {l.facts[i], l.steps[i], l.confidence_heads[i], l.embedding_heads[i]};
}

/// The rung of the session in `arena`: the one at the depth its header names. For what is no
/// session of any rung, the deepest, whose session_* functions then refuse it (checked_session
/// checks the depth against the rung's, and the tag covers the rung's facts).
inline Rung rung_of(const Ladder &l, const void *arena) {
  int64_t depth = l.max_depth;
  if (arena && reinterpret_cast<uintptr_t>(arena) % static_cast<uintptr_t>(l.facts[0].arena_align) == 0) {
    const int64_t named = static_cast<const SessionHeader *>(arena)->depth;
    if (holds_depth(l, named))
      depth = named;
  }
  return rung_at(l, depth);
}

inline size_t ladder_arena_size(const Ladder &l, int64_t depth) {
  return holds_depth(l, depth) ? static_cast<size_t>(rung_at(l, depth).facts.arena_size) : 0;
}

inline void *ladder_open(const Ladder &l, void *arena, size_t size, int64_t depth) {
  return holds_depth(l, depth) ? session_open(rung_at(l, depth).facts, arena, size) : nullptr;
}

/// NAME_restore: the image's rung is the one its header names, read only once the arena is known
/// to hold a header.
inline void *ladder_restore(const Ladder &l, void *arena, size_t size) {
  return size >= sizeof(SessionHeader) ? session_restore(rung_of(l, arena).facts, arena, size) : nullptr;
}

inline uint32_t ladder_depth(const Ladder &l, const void *arena) {
  const Rung r = rung_of(l, arena);
  return checked_session(r.facts, arena) ? static_cast<uint32_t>(r.facts.depth) : 0;
}

/// NAME_reopen_depth: the session's tokens fed again, from its log, at `depth`. The log lies at
/// the same offset in every rung (right after the header), so forgetting the state keeps it.
inline int ladder_reopen(const Ladder &l, void *arena, int64_t depth) {
  const Rung from = rung_of(l, arena);
  SessionHeader *h = checked_session(from.facts, arena);
  if (!h || !holds_depth(l, depth))
    return status_err_arg;
  if (depth == from.facts.depth)
    return status_ok;
  const Rung to = rung_at(l, depth);
  if (h->capacity < static_cast<uint64_t>(to.facts.arena_size))
    return status_err_arena;
  const int64_t position = h->position;
  const Parallel pool = h->parallel;
  reset_arena(to.facts, arena, h->capacity);
  h->parallel = pool;
  const int32_t *log = reinterpret_cast<const int32_t *>(static_cast<unsigned char *>(arena) + to.facts.token_log);
  feed_tokens(to.facts, to.step, arena, log, static_cast<size_t>(position));
  return status_ok;
}

} // namespace needle_rt
