//! Settings from the environment: `ZARRD__SECTION__KEY` overrides, and dataset option
//! values that arrive as TOML booleans or numbers.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::config::error::{ConfigError, invalid};

/// Option values as text: strings as they are, booleans and numbers as TOML writes them.
pub(super) fn option_texts<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let values = BTreeMap::<String, toml::Value>::deserialize(d)?;
    values
        .into_iter()
        .map(|(key, value)| match value {
            toml::Value::String(s) => Ok((key, s)),
            toml::Value::Boolean(b) => Ok((key, b.to_string())),
            toml::Value::Integer(i) => Ok((key, i.to_string())),
            toml::Value::Float(f) => Ok((key, f.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "option `{key}` is a {}, not a string, boolean or number",
                other.type_str()
            ))),
        })
        .collect()
}

/// The setting a `ZARRD__SECTION__KEY` variable names, as lowercase keys (`None` for other
/// variables).
fn env_keys(name: &str) -> Option<Vec<String>> {
    Some(name.strip_prefix("ZARRD__")?.split("__").map(str::to_ascii_lowercase).collect())
}

/// The datasets the environment sets a field of, and those of them whose `fallback` is
/// among the fields.
pub(super) fn env_datasets(env: &[(String, String)]) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut named, mut fallback) = (BTreeSet::new(), BTreeSet::new());
    for keys in env.iter().filter_map(|(name, _)| env_keys(name)) {
        let [section, name, field, ..] = keys.as_slice() else { continue };
        if section != "datasets" {
            continue;
        }
        if field == "fallback" {
            fallback.insert(name.clone());
        }
        named.insert(name.clone());
    }
    (named, fallback)
}

/// `ZARRD__LIMITS__MAX_IN_FLIGHT=64` sets `limits.max_in_flight`; values are TOML
/// literals when they parse as one, else strings.
pub(super) fn apply_env(
    table: &mut toml::Table,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(), ConfigError> {
    for (name, raw) in env {
        let Some(keys) = env_keys(&name) else {
            continue;
        };
        if keys.iter().any(String::is_empty) {
            return Err(invalid(&name, "empty path segment"));
        }
        let value = format!("v = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or(toml::Value::String(raw));
        let (last, parents) = keys.split_last().ok_or_else(|| invalid(&name, "no key"))?;
        let mut node = &mut *table;
        for key in parents {
            node = node
                .entry(key.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .ok_or_else(|| invalid(&name, format!("`{key}` is not a table")))?;
        }
        node.insert(last.clone(), value);
    }
    Ok(())
}
