//! Conformance cases (below).
