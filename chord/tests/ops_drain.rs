//! Operations tests (drain); filled in below.
