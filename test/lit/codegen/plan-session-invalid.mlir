// RUN: needle-opt %s -split-input-file -needle-plan-session -verify-diagnostics

// expected-error @+1 {{needle-plan-session: the module needs a positive needle.max_seq_len}}
module {
  func.func @step(%tok: i32, %pos: i32) {
    return
  }
}

// -----

// expected-error @+1 {{needle-plan-session: the module has no func.func @step}}
module attributes {needle.max_seq_len = 16 : i64} {
  func.func @other(%tok: i32, %pos: i32) {
    return
  }
}

// -----

// expected-error @+1 {{needle-plan-session: needle.max_rollback must be within 0..needle.max_seq_len}}
module attributes {needle.max_seq_len = 16 : i64, needle.max_rollback = 17 : i64} {
  func.func @step(%tok: i32, %pos: i32) {
    return
  }
}

// -----

// expected-error @+1 {{needle-plan-session: needle.max_rollback must be within 0..needle.max_seq_len}}
module attributes {needle.max_seq_len = 16 : i64, needle.max_rollback = -1 : i64} {
  func.func @step(%tok: i32, %pos: i32) {
    return
  }
}
