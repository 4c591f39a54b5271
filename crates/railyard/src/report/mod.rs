//! Reports people look at: self-contained HTML pages with inline SVG plots (no scripts, no
//! network), byte-identical for identical inputs.

pub mod svg;
