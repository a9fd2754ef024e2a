//! The integration tests, linked as one binary (one link instead of ~30, each of which
//! carried its own copy of the server): a module per area, the shared helpers in [`common`].
//! A test that needs the process to itself (process-wide counters, a global log
//! subscriber) runs its body in a child process of this binary: [`common::alone`].

mod common;

mod analysis;
mod api;
mod auth;
mod auth_cache;
mod auth_fuzz;
mod auth_jwt;
mod auth_tokens;
mod cli;
mod compat;
mod conformance;
mod containment;
mod corpus;
mod curvilinear;
mod docs;
mod download_masks;
mod downloads;
mod dtypes;
mod edr;
mod encodings;
mod etags;
mod geotiffs;
mod grids;
mod hot_responses;
mod http;
mod icechunk;
mod iiif;
mod iiif_windows;
mod layout;
mod maps;
mod memory;
mod missing_objects;
mod ome;
mod overviews;
mod panics;
mod properties;
mod storage_requests;
mod strings;
mod validators;
mod viewer;
mod virtual_datasets;
mod zip;
