//! Conformance cases for map_write: the model against the running kernel.
