//! JOSE (filled in by the JOSE work).
