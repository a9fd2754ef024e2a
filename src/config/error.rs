//! What is wrong with a configuration: the one error type of `config`, a leaf.

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("invalid configuration: {0}")]
    Parse(String),
    #[error("invalid configuration field `{field}`: {reason}")]
    Invalid { field: String, reason: String },
}

pub(super) fn invalid(field: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.to_owned(), reason: reason.into() }
}
