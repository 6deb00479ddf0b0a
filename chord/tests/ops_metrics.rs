//! Operations tests (metrics); filled in below.
