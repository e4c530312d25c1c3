//! Configuration (filled in by the configuration work).
