pub mod extensions;
pub mod planning;
pub mod stage;

/// Keys a user adds that dandori does not know. They survive a read–write round trip
/// in their original order.
pub type Extra = serde_json::Map<String, serde_json::Value>;
