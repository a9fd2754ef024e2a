//! Images of arrays: the IIIF Image API (`iiif`), web-map tiles (`maps`), the renderer that turns values into
//! PNG or JPEG with a window and a colormap (`render`, shared by every image route), and
//! overview pyramids (`overviews`); microscopy colours (`composite`: OME channels in their
//! colours and windows, label images in theirs); the keys of the rendered-image cache that
//! IIIF images and map tiles share (`rendered_key`).

pub mod composite;
pub mod iiif;
pub mod maps;
pub mod overviews;
pub mod render;
pub mod rendered_key;
