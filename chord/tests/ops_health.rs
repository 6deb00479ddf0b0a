//! Operations tests (health); filled in below.
