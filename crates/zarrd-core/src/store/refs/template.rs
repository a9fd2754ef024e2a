//! The two generative parts of kerchunk's version 1 format: `templates` (names substituted
//! into reference URLs as `{{name}}`) and `gen` (ranges of keys made from a pattern over
//! the product of named dimensions, with `{{expression}}` fields). kerchunk renders them
//! with jinja2; the expressions its writers use are names and integer arithmetic, which is
//! what is understood here (`+ - * / // %`, parentheses, integer literals).

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::{MAX_REFS, RefsError};

/// A value a `{{…}}` may name: a dimension's current value or a template.
#[derive(Clone, Debug)]
pub enum Var {
    Int(i64),
    Text(String),
}

/// Renders `text`, replacing each `{{expression}}` by its value.
pub fn render(text: &str, vars: &BTreeMap<String, Var>) -> Result<String, RefsError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| bad(text, "a `{{` is never closed"))?;
        let expression = after[..close].trim();
        match vars.get(expression) {
            Some(Var::Text(t)) => out.push_str(t),
            Some(Var::Int(i)) => out.push_str(&i.to_string()),
            None => out.push_str(&evaluate(expression, vars).map_err(|why| bad(text, &why))?.to_string()),
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn bad(text: &str, why: &str) -> RefsError {
    RefsError::Invalid(format!("cannot render `{text}`: {why}"))
}

/// The `gen` entries' dimensions: each `{"start"?, "stop", "step"?}` or a list of values.
pub fn dimensions(entry: &Value) -> Result<Vec<(String, Vec<Var>)>, RefsError> {
    let Some(dims) = entry.get("dimensions").and_then(Value::as_object) else {
        return Err(RefsError::Invalid("a `gen` entry has no `dimensions` object".into()));
    };
    dims.iter()
        .map(|(name, spec)| {
            let values = match spec {
                Value::Array(items) => items
                    .iter()
                    .map(|v| match v {
                        Value::Number(n) => n.as_i64().map(Var::Int),
                        Value::String(s) => Some(Var::Text(s.clone())),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| RefsError::Invalid(format!("gen dimension `{name}` lists a non-integer value")))?,
                Value::Object(range) => {
                    let field = |k: &str, default: Option<i64>| {
                        range
                            .get(k)
                            .map_or(default, Value::as_i64)
                            .ok_or_else(|| RefsError::Invalid(format!("gen dimension `{name}` needs an integer `{k}`")))
                    };
                    let (start, stop, step) = (field("start", Some(0))?, field("stop", None)?, field("step", Some(1))?);
                    if step < 1 {
                        return Err(RefsError::Invalid(format!("gen dimension `{name}` has a step below 1")));
                    }
                    let span = u64::try_from(stop.saturating_sub(start)).unwrap_or(0);
                    let count = usize::try_from(span.div_ceil(step as u64)).unwrap_or(usize::MAX);
                    if count > MAX_REFS {
                        return Err(RefsError::TooMany);
                    }
                    (0..count as i64).map(|i| Var::Int(start + i * step)).collect()
                }
                _ => return Err(RefsError::Invalid(format!("gen dimension `{name}` is neither a range nor a list"))),
            };
            Ok((name.clone(), values))
        })
        .collect()
}

/// Calls `each` with the variables of every point of the dimensions' product (the last
/// dimension fastest), on top of `base`.
pub fn for_each_point(
    dims: &[(String, Vec<Var>)],
    base: &BTreeMap<String, Var>,
    mut each: impl FnMut(&BTreeMap<String, Var>) -> Result<(), RefsError>,
) -> Result<(), RefsError> {
    if dims.iter().any(|(_, values)| values.is_empty()) {
        return Ok(());
    }
    let mut vars = base.clone();
    let mut at = vec![0usize; dims.len()];
    loop {
        for ((name, values), &i) in dims.iter().zip(&at) {
            vars.insert(name.clone(), values[i].clone());
        }
        each(&vars)?;
        let mut d = dims.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            at[d] += 1;
            if at[d] < dims[d].1.len() {
                break;
            }
            at[d] = 0;
        }
    }
}

/// Integer arithmetic over the variables: `+ - * / // %` and parentheses. `/` is exact
/// division (jinja2's true division, whose result kerchunk takes as an integer).
pub fn evaluate(expression: &str, vars: &BTreeMap<String, Var>) -> Result<i64, String> {
    let tokens = tokenize(expression)?;
    let mut parser = Parser { tokens, at: 0, vars };
    let value = parser.sum()?;
    if parser.at != parser.tokens.len() {
        return Err(format!("unexpected `{}`", parser.tokens[parser.at]));
    }
    Ok(value)
}

fn tokenize(text: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            tokens.push("//".into());
            i += 2;
        } else if "+-*/%()".contains(c) {
            tokens.push(c.to_string());
            i += 1;
        } else {
            return Err(format!("`{c}` is not understood (names, integers, + - * / // % and parentheses are)"));
        }
        if tokens.len() > 256 {
            return Err("the expression is too long".into());
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: Vec<String>,
    at: usize,
    vars: &'a BTreeMap<String, Var>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn sum(&mut self) -> Result<i64, String> {
        let mut value = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek() {
            let plus = op == "+";
            self.at += 1;
            let rhs = self.product()?;
            value = if plus { value.checked_add(rhs) } else { value.checked_sub(rhs) }.ok_or("integer overflow")?;
        }
        Ok(value)
    }

    fn product(&mut self) -> Result<i64, String> {
        let mut value = self.unary()?;
        while let Some(op @ ("*" | "/" | "//" | "%")) = self.peek() {
            let op = op.to_owned();
            self.at += 1;
            let rhs = self.unary()?;
            value = match op.as_str() {
                "*" => value.checked_mul(rhs).ok_or("integer overflow")?,
                _ if rhs == 0 => return Err("division by zero".into()),
                "/" if value % rhs != 0 => return Err(format!("{value} / {rhs} is not a whole number")),
                "/" => value / rhs,
                "//" => value.div_euclid(rhs),
                _ => value.rem_euclid(rhs),
            };
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<i64, String> {
        if self.peek() == Some("-") {
            self.at += 1;
            return self.unary()?.checked_neg().ok_or_else(|| "integer overflow".into());
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<i64, String> {
        let token = self.tokens.get(self.at).cloned().ok_or("the expression ends too soon")?;
        self.at += 1;
        if token == "(" {
            let value = self.sum()?;
            if self.peek() != Some(")") {
                return Err("a `(` is never closed".into());
            }
            self.at += 1;
            return Ok(value);
        }
        if let Ok(n) = token.parse::<i64>() {
            return Ok(n);
        }
        match self.vars.get(&token) {
            Some(Var::Int(i)) => Ok(*i),
            Some(Var::Text(t)) => t.parse().map_err(|_| format!("`{token}` is text, not a number")),
            None => Err(format!("`{token}` is not a dimension or template")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, Var)]) -> BTreeMap<String, Var> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    #[test]
    fn expressions_follow_integer_arithmetic() {
        let v = vars(&[("i", Var::Int(3)), ("j", Var::Int(-7))]);
        assert_eq!(evaluate("(i + 1) * 1000", &v), Ok(4000));
        assert_eq!(evaluate("i*2+1", &v), Ok(7));
        assert_eq!(evaluate("j // 2", &v), Ok(-4)); // Python floors
        assert_eq!(evaluate("j % 3", &v), Ok(2));
        assert_eq!(evaluate("12 / i", &v), Ok(4));
        assert!(evaluate("7 / 2", &v).is_err());
        assert!(evaluate("i / 0", &v).is_err());
        assert!(evaluate("k + 1", &v).is_err());
        assert!(evaluate("(i", &v).is_err());
        assert!(evaluate("i ** 2", &v).is_err());
        assert!(evaluate("9223372036854775807 + 1", &v).is_err());
    }

    #[test]
    fn templates_render_names_and_expressions() {
        let v = vars(&[("u", Var::Text("s3://b/f.nc".into())), ("i", Var::Int(2))]);
        assert_eq!(render("{{u}}", &v).unwrap(), "s3://b/f.nc");
        assert_eq!(render("x/{{ i }}.0/{{i*10}}", &v).unwrap(), "x/2.0/20");
        assert!(render("{{u", &v).is_err());
        assert_eq!(render("plain", &v).unwrap(), "plain");
    }

    #[test]
    fn points_run_the_last_dimension_fastest() {
        let dims = vec![
            ("a".to_owned(), vec![Var::Int(0), Var::Int(1)]),
            ("b".to_owned(), vec![Var::Text("x".into()), Var::Text("y".into())]),
        ];
        let mut seen = Vec::new();
        for_each_point(&dims, &BTreeMap::new(), |v| {
            seen.push(render("{{a}}{{b}}", v)?);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, ["0x", "0y", "1x", "1y"]);
    }
}
