//! Who a caller is, and how a request presented itself: the leaf types the rest of `auth`
//! and the HTTP edge share.

/// Who made a request: a name and groups, from an API key, a JWT, or a capability token
/// minted by one of those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    pub groups: Vec<String>,
    pub via: Via,
}

/// How the caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    ApiKey,
    Jwt,
    Capability,
}

/// The caller of a request (`None`: anonymous), as the access layer found it; handlers
/// whose answer depends on the caller (`/v1/datasets`, `/metrics`, `/v1/tokens`) read it
/// from the request's extensions.
#[derive(Debug, Clone, Default)]
pub struct Identity(pub Option<Caller>);

/// A request that arrived as `/t/TOKEN/REST` and is routed as `/REST` (by
/// `http::auth::rewrite`): its token, kept for the access layer, the response cache and
/// the URLs a response hands out (IIIF `info.json`, redirects).
#[derive(Debug, Clone)]
pub struct CapabilityPath {
    pub token: String,
}

impl CapabilityPath {
    /// What the client's URLs start with: `/t/TOKEN`.
    pub fn public_prefix(&self) -> String {
        format!("/t/{}", self.token)
    }
}
