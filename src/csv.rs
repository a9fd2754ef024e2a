//! CSV as RFC 4180 writes it, for every CSV body (`format=csv` of `/v1/slice` and
//! `/v1/reduce`, EDR `f=CSV`): fields separated by commas, a field quoted when it holds a
//! comma, a quote or a line break (its quotes doubled), every row ended by CRLF; a missing
//! value is an empty field (numbers: `crate::numbers`).

/// What ends every row, the header's too.
pub const ROW_END: &str = "\r\n";

/// Appends `text` as one field.
pub fn field(out: &mut String, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// Appends the header row of `names`.
pub fn header<'a>(out: &mut String, names: impl IntoIterator<Item = &'a str>) {
    for (i, name) in names.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        field(out, name);
    }
    out.push_str(ROW_END);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        let mut out = String::new();
        header(&mut out, ["time", "a,b", "say \"hi\"", "two\nlines"]);
        assert_eq!(out, "time,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\r\n");
    }
}
