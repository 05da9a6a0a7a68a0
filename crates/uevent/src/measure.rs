//! Cost model (below).
