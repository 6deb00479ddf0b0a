//! Operations tests (catch_up); filled in below.
