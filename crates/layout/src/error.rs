//! The one error type of the layout model: the field at fault and what was expected.

/// A bad model, layout, batch or placement: `field` names the input (`layout.tp`,
/// `batch.global`, …), `message` says what was expected. Printed as one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct LayoutError {
    /// The input field at fault.
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl LayoutError {
    /// An error on `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}
