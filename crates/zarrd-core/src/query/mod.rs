//! The one query plan every data route runs on: what a question needs of one array
//! ([`Need`]: per dimension the stored indices it visits, in the question's order, and
//! where only some pairs of two dimensions are wanted — a tile's cells, EDR's points — those
//! pairs), resolved on the array's read grid into chunk-aligned reads ([`Plan`]), then read
//! through the read path and gathered ([`gather`]).
//!
//! The routes differ only in how they state the need and use the cells:
//! - `/v1/slice` with `sel=` (label runs, two across a longitude seam) gathers the cells in
//!   C order (`s=` is one index selection already: it is the read path's own, streamed);
//! - `/v1/reduce` (the visited indices) folds each read as it arrives, kept dimensions
//!   outermost, never more than [`BLOCK_CELLS`] per read;
//! - `/maps` tiles (the cells a tile's pixels name) and EDR points (every point's cell,
//!   all steps and levels) look cells up by position: each chunk holding one is read once,
//!   whatever the number of pixels or points in it;
//! - EDR areas and cubes gather the box's cells, then mask those outside.

mod gather;
mod need;
mod plan;

pub use gather::Gathered;
pub use need::{Need, Pairs, Progression, progressions};
pub use plan::{BLOCK_CELLS, Limits, Plan, UNNEEDED};
