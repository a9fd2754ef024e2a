//! Text escaped for HTML and XML (the store routes' directory listings, a GeoTIFF's `GDAL_METADATA`):
//! names and attributes are stored bytes and may hold any character.

/// `text` with `& < > " '` as character references, safe in element text and in
/// attribute values of either language.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
