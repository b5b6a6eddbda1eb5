// The module is header-only (static inline functions); this file gives SwiftPM a C target to build.
