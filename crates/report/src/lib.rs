//! Reports people look at: self-contained HTML pages with inline SVG plots (no scripts, no
//! network), byte-identical for identical inputs, and the number formatting they share with the
//! CLI's tables.

pub mod columns;
pub mod fmt;
pub mod headline;
pub mod html;
pub mod summary;
pub mod svg;
pub mod table;
